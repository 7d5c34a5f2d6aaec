//! A reader that went away is EPIPE on the output side, never a SIGPIPE,
//! even with SIGPIPE's default disposition, which kills the process.
//!
//! Its own process (no test harness): the Rust runtime ignores SIGPIPE
//! before main, so this test restores the default, which would reach every
//! test sharing the process. A control child shows that the default is in
//! force: a plain write into a pipe without readers kills it.

mod common;

use std::fs::File;
use std::io::{self, Write};
use std::os::raw::c_int;
use std::os::unix::io::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use psplice::{copy, step, Flags, Pair, Side, Tee, TO_EOF};

const SIGPIPE: c_int = 13;
const SIG_DFL: usize = 0;

extern "C" {
    fn signal(sig: c_int, handler: usize) -> usize;
}

fn default_sigpipe() {
    // SAFETY: single-threaded here; SIG_DFL is a valid disposition.
    unsafe { signal(SIGPIPE, SIG_DFL) };
}

/// A pipe whose reader is gone.
fn broken_pipe() -> File {
    let (r, w) = common::pipe().unwrap();
    drop(r);
    w
}

fn file() -> std::fs::File {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("sigpipe-{}", std::process::id()));
    std::fs::write(&path, vec![7u8; 256 << 10]).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    std::fs::remove_file(path).unwrap();
    f
}

fn assert_epipe_out(e: &psplice::Error) {
    assert_eq!(
        (e.kind(), e.side()),
        (io::ErrorKind::BrokenPipe, Side::Out),
        "{e}"
    );
}

fn step_into_a_broken_pipe() {
    let (src, w) = (file(), broken_pipe());
    assert_epipe_out(&step(src.as_fd(), None, w.as_fd(), None, 4096, Flags::NONE).unwrap_err());
}

fn copy_into_a_broken_pipe() {
    let (src, w) = (file(), broken_pipe());
    assert_epipe_out(&copy(src.as_fd(), None, w.as_fd(), None, TO_EOF, Flags::NONE).unwrap_err());
}

fn pair_into_a_closed_socket() {
    let (src, (a, b)) = (file(), std::os::unix::net::UnixStream::pair().unwrap());
    drop(b);
    let pair = Pair::new(src.as_fd(), a.as_fd(), Flags::NONE).unwrap();
    assert_epipe_out(&pair.copy(None, None, TO_EOF, Flags::NONE).unwrap_err());
}

fn pair_from_a_socket_into_a_broken_pipe() {
    let (mut feed, input) = std::os::unix::net::UnixStream::pair().unwrap();
    feed.write_all(b"some bytes").unwrap();
    let w = broken_pipe();
    let pair = Pair::new(input.as_fd(), w.as_fd(), Flags::NONE).unwrap();
    let e = pair.step(None, None, 4096, Flags::NONE).unwrap_err();
    assert_epipe_out(&e);
    let held = pair.into_pending();
    assert!(held.is_empty() || held == b"some bytes"[..held.len()]);
}

fn tee_into_a_broken_pipe() {
    let (src, w) = (file(), broken_pipe());
    let mut tee = Tee::new(src.as_fd(), &[w.as_fd()], 0, Flags::NONE).unwrap();
    assert_epipe_out(&tee.copy(TO_EOF, Flags::NONE).unwrap_err());
}

/// The control: std's own write, with the default disposition, dies.
fn control_child() -> ! {
    default_sigpipe();
    let _ = broken_pipe().write_all(b"x");
    std::process::exit(0);
}

fn main() {
    if std::env::var_os("PSPLICE_SIGPIPE_CONTROL").is_some() {
        control_child();
    }
    let status = Command::new(std::env::current_exe().unwrap())
        .env("PSPLICE_SIGPIPE_CONTROL", "1")
        .status()
        .unwrap();
    let mut failed = 0;
    if status.signal() != Some(SIGPIPE) {
        eprintln!("control: a write into a broken pipe gave {status}, not SIGPIPE");
        failed += 1;
    }
    default_sigpipe();
    let tests: [(&str, fn()); 5] = [
        ("step_into_a_broken_pipe", step_into_a_broken_pipe),
        ("copy_into_a_broken_pipe", copy_into_a_broken_pipe),
        ("pair_into_a_closed_socket", pair_into_a_closed_socket),
        (
            "pair_from_a_socket_into_a_broken_pipe",
            pair_from_a_socket_into_a_broken_pipe,
        ),
        ("tee_into_a_broken_pipe", tee_into_a_broken_pipe),
    ];
    for (name, test) in tests {
        // A SIGPIPE would end the process here, and cargo test reports the
        // signal; an assertion that fails panics and ends it too.
        test();
        println!("test {name} ... ok");
    }
    // The summary line cargo's harness prints, so the counts add up.
    println!(
        "\ntest result: {}. {} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out\n",
        if failed == 0 { "ok" } else { "FAILED" },
        tests.len() + 1 - failed
    );
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
