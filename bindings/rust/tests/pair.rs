//! Prepared pairs: moves, copies, pending bytes under a slow reader, take,
//! into_pending and what Drop does with what is left.

mod common;

use std::fs;
use std::io::{self, Read};
use std::os::unix::io::AsFd;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use psplice::{Flags, Pair, Side, TO_EOF};

/// A move into the full output: EAGAIN on the output, the bytes pending.
fn jam(pair: &Pair<'_>) -> usize {
    let e = pair
        .step(None, None, 64 << 10, Flags::NONBLOCK)
        .unwrap_err();
    assert_eq!(e.wait_for(), Some(Side::Out), "{e}");
    assert!(e.parked().is_empty(), "a pair never parks");
    pair.pending()
}

#[test]
fn pending_bytes_reach_a_slow_reader_in_order() {
    let total = 4 << 20;
    // Socket to socket goes through a pipe: what the output cannot take
    // stays pending there.
    let (mut feed, input) = sockets();
    let (w, r) = sockets();
    w.set_nonblocking(true).unwrap();
    let writer = thread::spawn(move || {
        use std::io::Write;
        feed.write_all(&data(total)).unwrap();
    });
    let reader = slow_reader(r, 16 << 10, Duration::from_micros(200));
    let pair = Pair::new(input.as_fd(), w.as_fd(), Flags::NONE).unwrap();
    let (mut delivered, mut saw_pending) = (0u64, false);
    let deadline = Instant::now() + Duration::from_secs(60);
    while delivered < total as u64 && Instant::now() < deadline {
        let before = pair.pending() as u64;
        match pair.step(None, None, 1 << 20, Flags::NONBLOCK) {
            Ok(m) => {
                assert_eq!(pair.pending() as u64, before + m.in_bytes - m.out_bytes);
                delivered += m.out_bytes;
            }
            Err(e) => {
                let side = e.wait_for().unwrap_or_else(|| panic!("{e}"));
                saw_pending |= side == Side::Out && pair.pending() > 0;
                thread::sleep(Duration::from_micros(100));
            }
        }
    }
    assert_eq!(delivered, total as u64);
    assert_eq!(pair.pending(), 0);
    drop(pair);
    drop(w);
    writer.join().unwrap();
    let got = reader.join().unwrap();
    assert_eq!(got.len(), total);
    assert!(got == data(total), "the stream arrived changed");
    assert!(
        saw_pending,
        "the reader never fell behind with bytes pending"
    );
}

#[test]
fn take_hands_over_the_oldest_pending_bytes() {
    let j = jammed(64 << 10);
    let pair = Pair::new(j.input.as_fd(), j.output.as_fd(), Flags::NONE).unwrap();
    let pending = jam(&pair);
    assert!(pending > 100, "pending {pending}");
    let mut head = [0u8; 100];
    assert_eq!(pair.take(&mut head), 100);
    assert_eq!(&head[..], &data(100)[..]);
    assert_eq!(pair.pending(), pending - 100);
    let rest = pair.into_pending();
    assert_eq!(rest.len(), pending - 100);
    assert_eq!(&rest[..], &data(pending)[100..]);
}

#[test]
fn pending_go_out_first_once_the_output_drains() {
    let j = jammed(64 << 10);
    let pair = Pair::new(j.input.as_fd(), j.output.as_fd(), Flags::NONE).unwrap();
    let pending = jam(&pair);
    assert!(pending > 0);
    drop(j.feed);
    let mut drain = j.drain;
    let reader = thread::spawn(move || {
        let mut got = Vec::new();
        drain.read_to_end(&mut got).unwrap();
        got
    });
    // Blocking now, to the end: the copy delivers the pending bytes first.
    let moved = loop {
        match pair.copy(None, None, TO_EOF, Flags::NONE) {
            Err(e) if e.wait_for().is_some() => thread::sleep(Duration::from_millis(1)),
            other => break other.unwrap(),
        }
    };
    assert!(moved.out_bytes >= pending as u64);
    assert_eq!(pair.pending(), 0);
    drop(pair);
    drop(j.output);
    let got = reader.join().unwrap();
    assert_eq!(&got[..j.filled], &vec![0u8; j.filled][..]);
    assert!(
        got[j.filled..] == data(64 << 10),
        "the relayed stream differs"
    );
}

#[test]
fn drop_hands_pending_bytes_to_the_handler() {
    let j = jammed(64 << 10);
    let kept = Arc::new(Mutex::new(Vec::new()));
    let mut pair = Pair::new(j.input.as_fd(), j.output.as_fd(), Flags::NONE).unwrap();
    let pending = jam(&pair);
    let k = kept.clone();
    pair.on_drop_pending(move |bytes| k.lock().unwrap().extend(bytes));
    drop(pair);
    let kept = kept.lock().unwrap();
    assert_eq!(kept.len(), pending);
    assert_eq!(&kept[..], &data(pending)[..]);
}

#[test]
fn drop_with_nothing_pending_calls_no_handler() {
    let (a, b) = sockets();
    let mut pair = Pair::new(a.as_fd(), b.as_fd(), Flags::NONE).unwrap();
    pair.on_drop_pending(|_| panic!("called with nothing pending"));
    drop(pair);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "pending bytes")]
fn drop_without_a_handler_is_a_bug_in_debug_builds() {
    let j = jammed(64 << 10);
    let pair = Pair::new(j.input.as_fd(), j.output.as_fd(), Flags::NONE).unwrap();
    assert!(jam(&pair) > 0);
    drop(pair);
}

#[test]
fn file_pair_copies_with_offsets_and_holds_nothing() {
    let bytes = data(1 << 20);
    let (_, src) = file_with("src", &bytes);
    let (path, dst) = empty_file("dst");
    let pair = Pair::new(src.as_fd(), dst.as_fd(), Flags::NONE).unwrap();
    let (mut oi, mut oo) = (4096u64, 0u64);
    let s = pair
        .step(Some(&mut oi), Some(&mut oo), 1000, Flags::NONE)
        .unwrap();
    assert_eq!((oi, oo), (4096 + s.out_bytes, s.out_bytes));
    let m = pair
        .copy(Some(&mut oi), Some(&mut oo), TO_EOF, Flags::NONE)
        .unwrap();
    assert_eq!(s.out_bytes + m.out_bytes, (bytes.len() - 4096) as u64);
    assert_eq!(pair.pending(), 0);
    assert_eq!(pair.into_pending(), Vec::<u8>::new());
    assert_eq!(fs::read(path).unwrap(), &bytes[4096..]);
}

#[test]
fn new_refuses_bad_descriptors_with_their_side() {
    let (path, src) = file_with("src", b"abc");
    let read_only = fs::File::open(&path).unwrap();
    let e = Pair::new(src.as_fd(), read_only.as_fd(), Flags::NONE)
        .err()
        .unwrap();
    assert_eq!((e.errno(), e.side()), (9 /* EBADF */, Side::Out));
    let dir = fs::File::open(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (_, dst) = empty_file("dst");
    let e = Pair::new(dir.as_fd(), dst.as_fd(), Flags::NONE)
        .err()
        .unwrap();
    // errno, not ErrorKind::IsADirectory, which Rust 1.63 has not stable.
    assert_eq!((e.errno(), e.side()), (21 /* EISDIR */, Side::In));
    // NONBLOCK is a flag of each move, not of planning.
    let e = Pair::new(src.as_fd(), dst.as_fd(), Flags::NONBLOCK)
        .err()
        .unwrap();
    assert_eq!(
        (e.kind(), e.side()),
        (io::ErrorKind::InvalidInput, Side::None)
    );
}

#[test]
fn sigpipe_ignored_is_accepted_as_the_runtime_ignores_it() {
    // The Rust runtime sets SIGPIPE to SIG_IGN before main.
    let (a, b) = sockets();
    let pair = Pair::new(a.as_fd(), b.as_fd(), Flags::SIGPIPE_IGNORED).unwrap();
    drop(pair);
}

#[test]
fn threads_share_a_pair() {
    let bytes = data(2 << 20);
    let (_, src) = file_with("src", &bytes);
    let (path, dst) = empty_file("dst");
    dst.set_len(bytes.len() as u64).unwrap();
    let pair = Pair::new(src.as_fd(), dst.as_fd(), Flags::NONE).unwrap();
    let half = bytes.len() as u64 / 2;
    thread::scope(|s| {
        for part in 0..2u64 {
            let pair = &pair;
            s.spawn(move || {
                let (mut oi, mut oo) = (part * half, part * half);
                pair.copy(Some(&mut oi), Some(&mut oo), half, Flags::NONE)
                    .unwrap();
            });
        }
    });
    assert_eq!(fs::read(path).unwrap(), bytes);
}
