//! The relay example, run: a stream through it both ways arrives whole.
//! cargo test builds the examples before it runs the tests.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::data;

#[test]
fn relay_carries_both_directions_to_their_end() {
    let exe = std::env::current_exe().unwrap();
    let relay = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/relay");
    assert!(relay.exists(), "{} was not built", relay.display());
    // The target reads the whole request, then answers with it reversed.
    let target = TcpListener::bind("127.0.0.1:0").unwrap();
    let target_addr = target.local_addr().unwrap().to_string();
    let server = thread::spawn(move || {
        let (mut c, _) = target.accept().unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        got.reverse();
        c.write_all(&got).unwrap();
    });
    let mut child = Command::new(&relay)
        .args(["127.0.0.1:0", &target_addr, "1"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its first line names the address; the rest is read as it comes, so
    // that the relay's messages never meet a closed pipe.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("relay: listening on ")
        .expect("the address")
        .to_string();
    let said = thread::spawn(move || {
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        rest
    });
    let up = data(8 << 20);
    let client = TcpStream::connect(addr).unwrap();
    let mut writer = client.try_clone().unwrap();
    let sent = up.clone();
    let sender = thread::spawn(move || {
        writer.write_all(&sent).unwrap();
        writer.shutdown(Shutdown::Write).unwrap();
    });
    let mut down = Vec::new();
    (&client).read_to_end(&mut down).unwrap();
    sender.join().unwrap();
    server.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the relay did not exit");
        thread::sleep(Duration::from_millis(10));
    };
    let said = said.join().unwrap();
    assert!(status.success(), "{status}: {said}");
    let counts = format!("{} bytes up, {} down", 8 << 20, 8 << 20);
    assert!(said.contains(&counts), "the relay said: {said}");
    let mut want = up;
    want.reverse();
    assert!(
        down == want,
        "{} bytes came back, not the {} sent, reversed",
        down.len(),
        want.len()
    );
}
