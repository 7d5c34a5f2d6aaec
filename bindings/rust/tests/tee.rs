//! Tee: every sink gets the stream; a failed sink is out and the others go
//! on; a slow sink's bytes stay pending and can be taken.

mod common;

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::io::AsFd;
use std::time::Duration;

use common::*;
use psplice::{Flags, Side, Tee, TO_EOF};

#[test]
fn every_sink_gets_the_stream() {
    let bytes = data(3 << 20);
    let (_, src) = file_with("src", &bytes);
    let (p1, f1) = empty_file("sink1");
    let (r, w) = common::pipe().unwrap();
    let reader = slow_reader(r, 64 << 10, Duration::ZERO);
    let mut tee = Tee::new(src.as_fd(), &[f1.as_fd(), w.as_fd()], 0, Flags::NONE).unwrap();
    assert_eq!(tee.len(), 2);
    tee.copy(TO_EOF, Flags::NONE).unwrap();
    for sink in tee.sinks() {
        assert_eq!(
            (sink.in_bytes, sink.out_bytes),
            (bytes.len() as u64, bytes.len() as u64)
        );
        assert!(sink.error.is_none());
    }
    drop(tee);
    drop(w);
    assert_eq!(fs::read(p1).unwrap(), bytes);
    assert!(reader.join().unwrap() == bytes);
}

#[test]
fn a_sink_whose_reader_left_is_out_and_the_others_go_on() {
    let bytes = data(1 << 20);
    let (_, src) = file_with("src", &bytes);
    let (p1, f1) = empty_file("sink1");
    let (r, w) = common::pipe().unwrap();
    drop(r);
    let mut tee = Tee::new(src.as_fd(), &[w.as_fd(), f1.as_fd()], 0, Flags::NONE).unwrap();
    let e = tee.copy(TO_EOF, Flags::NONE).unwrap_err();
    assert_eq!((e.kind(), e.side()), (io::ErrorKind::BrokenPipe, Side::Out));
    let sinks = tee.sinks();
    let gone = sinks[0].error.as_ref().expect("the first sink failed");
    assert_eq!(
        (gone.kind(), gone.side()),
        (io::ErrorKind::BrokenPipe, Side::Out)
    );
    assert!(sinks[1].error.is_none());
    assert_eq!(sinks[1].out_bytes, bytes.len() as u64);
    drop(tee);
    assert_eq!(fs::read(p1).unwrap(), bytes);
}

#[test]
fn a_slow_sink_holds_bytes_pending_that_take_returns() {
    let (mut feed, input) = sockets();
    let (p1, f1) = empty_file("sink1");
    let (r, w) = common::pipe().unwrap();
    let bytes = data(8 << 20);
    let stream = bytes.clone();
    // The writer stops with EPIPE once the test drops the input.
    let writer = std::thread::spawn(move || feed.write_all(&stream).is_ok());
    let hold_max = 256 << 10;
    let mut tee = Tee::new(
        input.as_fd(),
        &[f1.as_fd(), w.as_fd()],
        hold_max,
        Flags::NONE,
    )
    .unwrap();
    let mut taken = 0usize;
    let mut waits_on = None;
    for _ in 0..10_000 {
        match tee.step(64 << 10, Flags::NONBLOCK) {
            Ok(n) => taken += n as usize,
            Err(e) => match e.wait_for().unwrap_or_else(|| panic!("{e}")) {
                Side::In => std::thread::sleep(Duration::from_millis(1)),
                side => {
                    waits_on = Some(side);
                    break;
                }
            },
        }
    }
    // The pipe nobody reads is full and its sink holds hold_max bytes or
    // more: the tee reads nothing more and waits for that output.
    assert_eq!(waits_on, Some(Side::Out));
    let pending = tee.pending(1);
    assert!(pending >= hold_max, "pending {pending}");
    assert_eq!(tee.pending(0), 0);
    let sinks = tee.sinks();
    assert_eq!(sinks[1].error.as_ref().map(|e| e.side()), Some(Side::Out));
    let mut in_pipe = vec![0u8; taken - pending];
    (&r).read_exact(&mut in_pipe).unwrap();
    let all = tee.into_pending();
    assert_eq!((all[0].len(), all[1].len()), (0, pending));
    // What the pipe holds, then what was pending for it: the stream taken.
    in_pipe.extend_from_slice(&all[1]);
    assert!(
        in_pipe[..] == bytes[..taken],
        "the pipe sink's bytes differ"
    );
    assert!(fs::read(p1).unwrap()[..] == bytes[..taken]);
    drop(input);
    assert!(!writer.join().unwrap());
}

#[test]
fn new_refuses_a_bad_sink_and_no_sinks() {
    let (path, src) = file_with("src", b"abc");
    let read_only = fs::File::open(&path).unwrap();
    let e = Tee::new(src.as_fd(), &[read_only.as_fd()], 0, Flags::NONE)
        .err()
        .unwrap();
    assert_eq!((e.errno(), e.side()), (9 /* EBADF */, Side::Out));
    let e = Tee::new(src.as_fd(), &[], 0, Flags::NONE).err().unwrap();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
}
