//! The relay on tokio over Unix stream sockets: bytes both ways under a
//! slow reader, which makes the output's EAGAIN happen, and EPIPE from a
//! reader that went away as an error on side out.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::Duration;

use common::{data, slow_reader, sockets};
use std::os::unix::io::AsFd;

use psplice::{Flags, Pair, Side};
use tokio::io::unix::AsyncFd;
use tokio::time::timeout;

/// No test waits longer than this for the relay.
const LIMIT: Duration = Duration::from_secs(60);

/// The relay's two sockets, registered, and their peers: the client's and
/// the server's ends.
fn relay_ends() -> (
    AsyncFd<UnixStream>,
    AsyncFd<UnixStream>,
    UnixStream,
    UnixStream,
) {
    let (client, a) = sockets();
    let (b, server) = sockets();
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    (
        AsyncFd::new(a).unwrap(),
        AsyncFd::new(b).unwrap(),
        client,
        server,
    )
}

/// Writes `bytes` to `s` in a thread, then ends writing.
fn send(mut s: UnixStream, bytes: Vec<u8>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        s.write_all(&bytes).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
    })
}

#[tokio::test]
async fn both_ways_arrive_whole_under_a_slow_reader() {
    let (a, b, client, server) = relay_ends();
    let up = data(4 << 20);
    let mut down = data(1 << 20);
    down.reverse();
    let client_sends = send(client.try_clone().unwrap(), up.clone());
    let server_sends = send(server.try_clone().unwrap(), down.clone());
    // The server reads 16 KiB every 200 µs, far slower than the relay
    // moves: the socket to it fills, and the up direction waits for it.
    let server_got = slow_reader(server, 16 << 10, Duration::from_micros(200));
    let client_got = thread::spawn(move || {
        let mut got = Vec::new();
        (&client).read_to_end(&mut got).unwrap();
        got
    });
    let (went_up, went_down) = timeout(LIMIT, psplice_tokio::relay(&a, &b))
        .await
        .expect("the relay ends")
        .unwrap();
    client_sends.join().unwrap();
    server_sends.join().unwrap();
    assert_eq!(went_up.bytes, up.len() as u64);
    assert_eq!(went_down.bytes, down.len() as u64);
    assert!(
        went_up.waited_out > 0,
        "the slow reader never filled the output: {went_up:?}"
    );
    assert!(
        server_got.join().unwrap() == up,
        "the up stream arrived changed"
    );
    assert!(
        client_got.join().unwrap() == down,
        "the down stream arrived changed"
    );
}

/// A client sending more than the sockets between hold to a server that
/// reads 64 KiB and goes; the server's thread returns what it read.
fn server_goes(
    client: UnixStream,
    server: UnixStream,
) -> (thread::JoinHandle<()>, thread::JoinHandle<Vec<u8>>) {
    let client_sends = thread::spawn(move || {
        // It fails once the relay's socket is closed.
        let _ = (&client).write_all(&data(8 << 20));
    });
    let server_reads = thread::spawn(move || {
        let mut first = vec![0u8; 64 << 10];
        (&server).read_exact(&mut first).unwrap();
        first
    });
    (client_sends, server_reads)
}

#[tokio::test]
async fn a_reader_gone_is_epipe_on_side_out() {
    let (a, b, client, server) = relay_ends();
    let (client_sends, server_reads) = server_goes(client, server);
    let pair = Pair::new(a.get_ref().as_fd(), b.get_ref().as_fd(), Flags::NONE).unwrap();
    let e = timeout(LIMIT, psplice_tokio::forward(&pair, &a, &b))
        .await
        .expect("the move ends")
        .unwrap_err();
    let e = psplice::Error::from_io(&e).unwrap_or_else(|| panic!("not a psplice error: {e}"));
    assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "not EPIPE: {e}");
    assert_eq!(e.side(), Side::Out, "{e}");
    assert!(
        server_reads.join().unwrap() == data(64 << 10),
        "the first bytes arrived changed"
    );
    // What the pair took and could not deliver is still the caller's.
    drop(pair.into_pending());
    drop(a);
    client_sends.join().unwrap();
}

#[tokio::test]
async fn a_peer_gone_ends_the_relay_with_its_error() {
    let (a, b, client, server) = relay_ends();
    let (client_sends, server_reads) = server_goes(client, server);
    let e = timeout(LIMIT, psplice_tokio::relay(&a, &b))
        .await
        .expect("the relay ends")
        .unwrap_err();
    // Which direction meets the server's close first is a race: writing to
    // it fails with EPIPE, reading what it sent with ECONNRESET, since it
    // closed with bytes unread.
    let e = psplice::Error::from_io(&e).unwrap_or_else(|| panic!("not a psplice error: {e}"));
    let gone = [
        (io::ErrorKind::BrokenPipe, Side::Out),
        (io::ErrorKind::ConnectionReset, Side::In),
    ];
    assert!(gone.contains(&(e.kind(), e.side())), "{e}");
    server_reads.join().unwrap();
    drop(a);
    client_sends.join().unwrap();
}
