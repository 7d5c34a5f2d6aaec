//! The one-shot calls: step and copy, offsets, O_APPEND, bad descriptors,
//! EAGAIN's side, parked bytes and the error's conversions.

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsFd;

use common::*;
use psplice::{copy, step, Error, Flags, Method, Side, TO_EOF};

#[test]
fn copy_file_to_file_to_eof() {
    let bytes = data(3 << 20);
    let (_, src) = file_with("src", &bytes);
    let (path, dst) = empty_file("dst");
    let moved = copy(src.as_fd(), None, dst.as_fd(), None, TO_EOF, Flags::NONE).unwrap();
    assert_eq!(moved.in_bytes, bytes.len() as u64);
    assert_eq!(moved.out_bytes, bytes.len() as u64);
    assert_ne!(moved.method, Method::None);
    assert_eq!(fs::read(path).unwrap(), bytes);
}

#[test]
fn step_moves_at_most_len_and_ends_with_zero() {
    let bytes = data(10_000);
    let (_, src) = file_with("src", &bytes);
    let (path, dst) = empty_file("dst");
    let first = step(src.as_fd(), None, dst.as_fd(), None, 4096, Flags::NONE).unwrap();
    assert!(first.out_bytes > 0 && first.out_bytes <= 4096, "{first:?}");
    let rest = copy(src.as_fd(), None, dst.as_fd(), None, TO_EOF, Flags::NONE).unwrap();
    assert_eq!(first.out_bytes + rest.out_bytes, bytes.len() as u64);
    let end = step(src.as_fd(), None, dst.as_fd(), None, 4096, Flags::NONE).unwrap();
    assert_eq!((end.in_bytes, end.out_bytes), (0, 0));
    assert_eq!(fs::read(path).unwrap(), bytes);
}

#[test]
fn offsets_are_positional_and_advanced() {
    let bytes = data(100_000);
    let (_, mut src) = file_with("src", &bytes);
    let (path, mut dst) = empty_file("dst");
    let (mut off_in, mut off_out) = (1000u64, 5u64);
    let moved = copy(
        src.as_fd(),
        Some(&mut off_in),
        dst.as_fd(),
        Some(&mut off_out),
        50_000,
        Flags::NONE,
    )
    .unwrap();
    assert_eq!(moved.out_bytes, 50_000);
    assert_eq!((off_in, off_out), (51_000, 50_005));
    // The file positions were not touched.
    assert_eq!(src.stream_position().unwrap(), 0);
    assert_eq!(dst.stream_position().unwrap(), 0);
    let out = fs::read(path).unwrap();
    assert_eq!(&out[5..], &bytes[1000..51_000]);
    assert_eq!(&out[..5], &[0u8; 5]);
    // A step with offsets advances them by what it delivered.
    let s = step(
        src.as_fd(),
        Some(&mut off_in),
        dst.as_fd(),
        Some(&mut off_out),
        10,
        Flags::NONE,
    )
    .unwrap();
    assert_eq!(
        (off_in, off_out),
        (51_000 + s.out_bytes, 50_005 + s.out_bytes)
    );
    src.seek(SeekFrom::Start(0)).unwrap();
    dst.seek(SeekFrom::Start(0)).unwrap();
}

#[test]
fn offset_past_i64_max_is_einval_on_its_side() {
    let (_, src) = file_with("src", b"abc");
    let (_, dst) = empty_file("dst");
    let mut off_in = u64::MAX - 1;
    let e = step(
        src.as_fd(),
        Some(&mut off_in),
        dst.as_fd(),
        None,
        3,
        Flags::NONE,
    )
    .unwrap_err();
    assert_eq!(
        (e.kind(), e.side()),
        (io::ErrorKind::InvalidInput, Side::In)
    );
    assert_eq!(off_in, u64::MAX - 1);
    let mut off_out = 1u64 << 63;
    let e = copy(
        src.as_fd(),
        None,
        dst.as_fd(),
        Some(&mut off_out),
        3,
        Flags::NONE,
    )
    .unwrap_err();
    assert_eq!(
        (e.kind(), e.side()),
        (io::ErrorKind::InvalidInput, Side::Out)
    );
}

#[test]
fn offset_on_a_pipe_is_espipe() {
    let (r, mut w) = common::pipe().unwrap();
    let (_, dst) = empty_file("dst");
    w.write_all(b"xy").unwrap();
    let mut off = 0u64;
    let e = step(r.as_fd(), Some(&mut off), dst.as_fd(), None, 2, Flags::NONE).unwrap_err();
    assert_eq!((e.errno(), e.side()), (29 /* ESPIPE */, Side::In));
    assert_eq!(e.in_bytes(), 0);
}

#[test]
fn copy_onto_an_append_file_appends() {
    let bytes = data(2 << 20);
    let (_, src) = file_with("src", &bytes);
    let path = scratch("append");
    fs::write(&path, b"head:").unwrap();
    let dst = OpenOptions::new().append(true).open(&path).unwrap();
    let moved = copy(src.as_fd(), None, dst.as_fd(), None, TO_EOF, Flags::NONE).unwrap();
    assert_eq!(moved.out_bytes, bytes.len() as u64);
    let out = fs::read(&path).unwrap();
    assert_eq!(&out[..5], b"head:");
    assert_eq!(&out[5..], &bytes[..]);
    // A positional write would append regardless of the offset: refused.
    let mut off = 0u64;
    let e = copy(
        src.as_fd(),
        Some(&mut 0),
        dst.as_fd(),
        Some(&mut off),
        10,
        Flags::NONE,
    )
    .unwrap_err();
    assert_eq!(
        (e.kind(), e.side(), e.out_bytes()),
        (io::ErrorKind::InvalidInput, Side::Out, 0)
    );
}

#[test]
fn bad_descriptors_name_their_side() {
    let (path, src) = file_with("src", b"abc");
    let read_only = File::open(&path).unwrap();
    let e = step(src.as_fd(), None, read_only.as_fd(), None, 3, Flags::NONE).unwrap_err();
    assert_eq!((e.errno(), e.side()), (9 /* EBADF */, Side::Out));
    let (_, dst) = empty_file("dst");
    let write_only = OpenOptions::new().write(true).open(&path).unwrap();
    let e = copy(
        write_only.as_fd(),
        None,
        dst.as_fd(),
        None,
        TO_EOF,
        Flags::NONE,
    )
    .unwrap_err();
    assert_eq!((e.errno(), e.side()), (9, Side::In));
    const O_PATH: i32 = 0o10000000;
    let opath = OpenOptions::new()
        .read(true)
        .custom_flags(O_PATH)
        .open(&path)
        .unwrap();
    let e = step(opath.as_fd(), None, dst.as_fd(), None, 3, Flags::NONE).unwrap_err();
    assert_eq!((e.errno(), e.side()), (9, Side::In));
    let dir = File::open(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let e = step(dir.as_fd(), None, dst.as_fd(), None, 3, Flags::NONE).unwrap_err();
    // errno, not ErrorKind::IsADirectory, which Rust 1.63 has not stable.
    assert_eq!((e.errno(), e.side()), (21 /* EISDIR */, Side::In));
}

#[test]
fn unknown_flag_is_refused_on_no_side() {
    let (_, src) = file_with("src", b"abc");
    let (_, dst) = empty_file("dst");
    let e = step(
        src.as_fd(),
        None,
        dst.as_fd(),
        None,
        3,
        Flags::from_bits_retain(1 << 30),
    )
    .unwrap_err();
    assert_eq!(
        (e.kind(), e.side()),
        (io::ErrorKind::InvalidInput, Side::None)
    );
}

#[test]
fn eagain_names_the_input_when_it_is_empty() {
    let (a, _b) = sockets();
    let (_, dst) = empty_file("dst");
    let e = step(a.as_fd(), None, dst.as_fd(), None, 4096, Flags::NONBLOCK).unwrap_err();
    assert_eq!(e.wait_for(), Some(Side::In));
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
}

#[test]
fn eagain_names_the_output_when_it_is_full() {
    let bytes = data(1 << 20);
    let (_, src) = file_with("src", &bytes);
    let (r, w) = common::pipe().unwrap();
    let mut delivered = 0u64;
    let e = loop {
        match step(src.as_fd(), None, w.as_fd(), None, 1 << 20, Flags::NONBLOCK) {
            Ok(m) if m.out_bytes > 0 => delivered += m.out_bytes,
            Ok(m) => panic!("the pipe never filled: {m:?}"),
            Err(e) => break e,
        }
    };
    assert_eq!(e.wait_for(), Some(Side::Out));
    assert!(e.parked().is_empty(), "a file input parks nothing");
    // The file position is just past the last byte delivered.
    let mut src = src;
    assert_eq!(src.stream_position().unwrap(), delivered);
    let mut got = vec![0u8; delivered as usize];
    (&r).read_exact(&mut got).unwrap();
    assert_eq!(got, &bytes[..delivered as usize]);
}

#[test]
fn bytes_taken_from_a_socket_and_not_delivered_are_parked() {
    let bytes = data(512 << 10);
    let (mut feed, input) = sockets();
    let (output, drain) = sockets();
    input.set_nonblocking(true).unwrap();
    output.set_nonblocking(true).unwrap();
    // Fill the output socket so that it takes nothing more.
    let filler = vec![0u8; 64 << 10];
    let mut filled = 0usize;
    while let Ok(n) = (&output).write(&filler) {
        filled += n;
    }
    let writer = std::thread::spawn(move || feed.write_all(&bytes).map(|_| bytes));
    let mut taken = Vec::new();
    let mut seen_parked = false;
    for _ in 0..1000 {
        match step(
            input.as_fd(),
            None,
            output.as_fd(),
            None,
            256 << 10,
            Flags::NONBLOCK,
        ) {
            Ok(m) => assert_eq!(m.in_bytes, m.out_bytes),
            Err(e) => {
                assert_eq!(e.parked().len() as u64, e.in_bytes() - e.out_bytes());
                seen_parked |= !e.parked().is_empty();
                if e.wait_for() == Some(Side::In) && taken.len() >= 256 << 10 {
                    break;
                }
                taken.extend_from_slice(e.parked());
                if seen_parked {
                    break;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(input);
    drop(drain);
    drop(writer);
    assert!(
        seen_parked,
        "no parked bytes after {filled} bytes filled the output"
    );
    // The parked bytes are the start of the stream: nothing was delivered.
    assert_eq!(&taken[..], &data(taken.len())[..]);
}

#[test]
fn error_converts_to_io_error_keeping_everything() {
    let (a, _b) = sockets();
    let (_, dst) = empty_file("dst");
    let e = step(a.as_fd(), None, dst.as_fd(), None, 1, Flags::NONBLOCK).unwrap_err();
    assert_eq!(e.to_io_error().raw_os_error(), Some(e.errno()));
    let msg = e.to_string();
    assert!(msg.contains("side in"), "{msg}");
    let io_err: io::Error = e.into();
    assert_eq!(io_err.kind(), io::ErrorKind::WouldBlock);
    let back = Error::from_io(&io_err).expect("the psplice error inside");
    assert_eq!(back.side(), Side::In);
}

#[test]
fn only_flag_forces_the_method() {
    let bytes = data(100_000);
    let (_, src) = file_with("src", &bytes);
    let (path, dst) = empty_file("dst");
    let moved = copy(
        src.as_fd(),
        None,
        dst.as_fd(),
        None,
        TO_EOF,
        Flags::only(Method::ReadWrite),
    )
    .unwrap();
    assert_eq!(moved.method, Method::ReadWrite);
    assert_eq!(moved.method.name(), "readwrite");
    assert_eq!(fs::read(path).unwrap(), bytes);
    let (r, _w) = common::pipe().unwrap();
    let e = copy(
        src.as_fd(),
        Some(&mut 0),
        r.as_fd(),
        None,
        1,
        Flags::only(Method::CopyFileRange),
    )
    .unwrap_err();
    assert!(e.errno() != 0);
}

#[test]
fn version_is_the_running_library() {
    let v = psplice::version();
    assert_eq!(v.split('.').count(), 3, "{v}");
    assert!(v.starts_with("0."), "{v}");
}
