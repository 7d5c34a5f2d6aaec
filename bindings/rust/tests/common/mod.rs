//! What the tests share: patterned data, scratch files, a slow reader.
#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

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
