//! What the tests share: patterned data, scratch files, a slow reader, and
//! a relay example run against a target on TCP loopback.
#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::raw::c_int;
use std::os::unix::io::FromRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// A pipe, read end first, close-on-exec: what `std::io::pipe` makes, for
/// the Rust the crates say they need (1.63; `std::io::pipe` came in 1.87).
pub fn pipe() -> std::io::Result<(File, File)> {
    extern "C" {
        fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    }
    const O_CLOEXEC: c_int = 0o2000000;
    let mut fds: [c_int; 2] = [-1, -1];
    if unsafe { pipe2(fds.as_mut_ptr(), O_CLOEXEC) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// Bytes that tell their position apart: a lost or repeated byte shows.
pub fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ (i / 251) as u8).collect()
}

/// A fresh path under the target's scratch directory (on disk, not tmpfs).
pub fn scratch(name: &str) -> PathBuf {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{name}-{}-{n}", std::process::id()))
}

/// A file holding `bytes`, open for reading.
pub fn file_with(name: &str, bytes: &[u8]) -> (PathBuf, File) {
    let path = scratch(name);
    File::create(&path).unwrap().write_all(bytes).unwrap();
    let f = File::open(&path).unwrap();
    (path, f)
}

/// A new empty file, open for reading and writing.
pub fn empty_file(name: &str) -> (PathBuf, File) {
    let path = scratch(name);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    (path, f)
}

/// A connected pair of Unix stream sockets.
pub fn sockets() -> (UnixStream, UnixStream) {
    UnixStream::pair().unwrap()
}

/// Reads `r` to its end in a thread, `chunk` bytes at a time with a pause
/// between reads: a reader slower than the writer.
pub fn slow_reader<R: Read + Send + 'static>(
    mut r: R,
    chunk: usize,
    pause: Duration,
) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; chunk];
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            match r.read(&mut buf).unwrap() {
                0 => break,
                n => got.extend_from_slice(&buf[..n]),
            }
            thread::sleep(pause);
        }
        got
    })
}

/// Sockets set up so that a move takes bytes it cannot deliver: `input`
/// holds `n` bytes of `data`, `output` is full (its peer, `drain`, has
/// `filled` bytes of zeros to read first). Both are non-blocking.
pub struct Jammed {
    pub input: UnixStream,
    pub output: UnixStream,
    pub drain: UnixStream,
    pub feed: UnixStream,
    pub filled: usize,
}

pub fn jammed(n: usize) -> Jammed {
    let (mut feed, input) = sockets();
    let (output, drain) = sockets();
    input.set_nonblocking(true).unwrap();
    output.set_nonblocking(true).unwrap();
    feed.set_nonblocking(true).unwrap();
    let filler = vec![0u8; 64 << 10];
    let mut filled = 0usize;
    while let Ok(k) = (&output).write(&filler) {
        filled += k;
    }
    let bytes = data(n);
    let mut sent = 0;
    while sent < n {
        sent += feed
            .write(&bytes[sent..])
            .expect("the input socket takes n bytes");
    }
    Jammed {
        input,
        output,
        drain,
        feed,
        filled,
    }
}

/// A target on TCP loopback that answers each of `n` connections with what
/// it sent, reversed, once the request has ended. Returns its address.
pub fn reversing_target(n: usize) -> (String, thread::JoinHandle<()>) {
    let target = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = target.local_addr().unwrap().to_string();
    let server = thread::spawn(move || {
        let conns: Vec<_> = (0..n)
            .map(|_| {
                let (mut c, _) = target.accept().unwrap();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    c.read_to_end(&mut got).unwrap();
                    got.reverse();
                    c.write_all(&got).unwrap();
                })
            })
            .collect();
        for c in conns {
            c.join().unwrap();
        }
    });
    (addr, server)
}

/// Sends `up` to `addr` in a thread, ends writing, and returns what came
/// back until the end.
pub fn exchange(addr: String, up: Vec<u8>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let s = TcpStream::connect(addr).unwrap();
        let mut writer = s.try_clone().unwrap();
        let sender = thread::spawn(move || {
            writer.write_all(&up).unwrap();
            writer.shutdown(Shutdown::Write).unwrap();
        });
        let mut down = Vec::new();
        (&s).read_to_end(&mut down).unwrap();
        sender.join().unwrap();
        down
    })
}

/// The package's relay example run as `relay 127.0.0.1:0 TARGET COUNT`.
pub struct RelayExample {
    child: Child,
    /// The address it listens on, from its first line.
    pub addr: String,
    said: thread::JoinHandle<String>,
}

impl RelayExample {
    pub fn start(target: &str, count: usize) -> RelayExample {
        // cargo test builds the examples before it runs the tests, next to
        // the tests' own directory.
        let exe = std::env::current_exe().unwrap();
        let relay = exe.parent().unwrap().parent().unwrap();
        let relay = relay.join("examples/relay");
        assert!(relay.exists(), "{} was not built", relay.display());
        let mut child = Command::new(&relay)
            .args(["127.0.0.1:0", target, &count.to_string()])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Its first line names the address; the rest is read as it comes,
        // so that the relay's messages never meet a closed pipe.
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
        RelayExample { child, addr, said }
    }

    /// Waits up to 30 s for it to exit, which it must do with success;
    /// returns what it said after its first line.
    pub fn finish(mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the relay did not exit");
            thread::sleep(Duration::from_millis(10));
        };
        let said = self.said.join().unwrap();
        assert!(status.success(), "{status}: {said}");
        said
    }
}

/// Asserts that `down` is `up` reversed and that the relay said it moved
/// that many bytes each way.
pub fn assert_reversed(said: &str, up: &[u8], down: &[u8]) {
    let counts = format!("{n} bytes up, {n} down", n = up.len());
    assert!(said.contains(&counts), "no \"{counts}\" in: {said}");
    assert!(
        down.iter().eq(up.iter().rev()),
        "{} bytes came back, not the {} sent, reversed",
        down.len(),
        up.len()
    );
}
