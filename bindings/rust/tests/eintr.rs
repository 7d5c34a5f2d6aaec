//! Flags::EINTR: a copy that a signal handler interrupts returns EINTR,
//! with the bytes it delivered, instead of going back to waiting.
//!
//! Its own process (no test harness): it installs a SIGALRM handler, which
//! every test sharing the process would share.

mod common;

use std::io::{self, Write};
use std::os::raw::c_int;
use std::os::unix::io::AsFd;

use psplice::{copy, Flags, Side, TO_EOF};

const SIGALRM: c_int = 14;

extern "C" {
    fn signal(sig: c_int, handler: usize) -> usize;
    fn siginterrupt(sig: c_int, flag: c_int) -> c_int;
    fn alarm(seconds: u32) -> u32;
}

extern "C" fn noted(_: c_int) {}

fn main() {
    // SAFETY: single-threaded here; the handler does nothing. siginterrupt
    // drops SA_RESTART, so that the handler interrupts the wait.
    unsafe {
        signal(SIGALRM, noted as extern "C" fn(c_int) as usize);
        siginterrupt(SIGALRM, 1);
    }
    let (r, mut w) = common::pipe().unwrap();
    w.write_all(b"early").unwrap();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("eintr-{}", std::process::id()));
    let out = std::fs::File::create(&path).unwrap();
    // SAFETY: alarm has no memory effects.
    unsafe { alarm(1) };
    let e = copy(r.as_fd(), None, out.as_fd(), None, TO_EOF, Flags::EINTR).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Interrupted, "{e}");
    assert_eq!(
        (e.side(), e.in_bytes(), e.out_bytes()),
        (Side::In, 5, 5),
        "{e}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"early");
    std::fs::remove_file(path).unwrap();
    println!("test copy_returns_on_eintr ... ok");
    println!("\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n");
}
