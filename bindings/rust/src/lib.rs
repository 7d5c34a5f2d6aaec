//! Rust bindings for libpsplice: move bytes between any two file
//! descriptors with the least copying Linux allows, with the C library's
//! contract kept whole — which side an error or an `EAGAIN` belongs to, the
//! bytes taken and delivered, and every byte taken that could not be
//! delivered handed back, never dropped. See psplice(3).
//!
//! ```no_run
//! use std::fs::File;
//! use std::os::unix::io::AsFd;
//!
//! let src = File::open("/etc/hostname")?;
//! let stdout = std::io::stdout();
//! let moved = psplice::copy(src.as_fd(), None, stdout.as_fd(), None,
//!                           psplice::TO_EOF, psplice::Flags::NONE)?;
//! eprintln!("{} bytes by {}", moved.out_bytes, moved.method);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The descriptors are borrowed ([`BorrowedFd`]), never closed. SIGPIPE
//! never reaches the program: a reader that went away is an [`Error`] with
//! errno `EPIPE` on [`Side::Out`], whatever SIGPIPE's disposition.

use std::io;
use std::ops::{BitOr, BitOrAssign};
use std::os::raw::c_uint;
use std::os::unix::io::{AsRawFd, BorrowedFd};

mod error;
mod pair;
mod sync;
pub mod sys;
mod tee;

pub use error::{Error, Method, Side};
pub use pair::Pair;
pub use sync::{sync, Level, SyncError, SyncFlags, WriteBehind};
pub use tee::{SinkResult, Tee};

/// A length that means "to the end of the input" (PSPLICE_TO_EOF).
pub const TO_EOF: u64 = sys::PSPLICE_TO_EOF;

/// The flags of a move or copy (PSPLICE_F_*), combined with `|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(c_uint);

impl Flags {
    /// No flag.
    pub const NONE: Flags = Flags(0);
    /// A hint: move pages instead of copying (SPLICE_F_MOVE).
    pub const MOVE: Flags = Flags(sys::PSPLICE_F_MOVE);
    /// Do not wait: a call that would wait fails with EAGAIN, and
    /// [`Error::wait_for`] names the side to wait for.
    pub const NONBLOCK: Flags = Flags(sys::PSPLICE_F_NONBLOCK);
    /// More data follows (SPLICE_F_MORE, MSG_MORE).
    pub const MORE: Flags = Flags(sys::PSPLICE_F_MORE);
    /// Fail with EOPNOTSUPP rather than copy through user memory.
    pub const NOFALLBACK: Flags = Flags(sys::PSPLICE_F_NOFALLBACK);
    /// Try FICLONERANGE first (file to file).
    pub const REFLINK: Flags = Flags(sys::PSPLICE_F_REFLINK);
    /// A promise that SIGPIPE is ignored and unblocked for as long as the
    /// call or the pair is used: moves skip the SIGPIPE guard. The Rust
    /// runtime ignores SIGPIPE at start-up unless the program changed that.
    pub const SIGPIPE_IGNORED: Flags = Flags(sys::PSPLICE_F_SIGPIPE_IGNORED);
    /// A copy that a signal handler interrupts returns EINTR with its
    /// totals instead of retrying (copies only; a tee refuses it).
    pub const EINTR: Flags = Flags(sys::PSPLICE_F_EINTR);
    /// Share extents or fail with EOPNOTSUPP; never copy.
    pub const REFLINK_ONLY: Flags =
        Flags(sys::PSPLICE_F_REFLINK | sys::psplice_f_only(Method::Clone as i32));

    /// Use exactly this mechanism, or fail with EOPNOTSUPP (PSPLICE_F_ONLY).
    pub const fn only(method: Method) -> Flags {
        Flags(sys::psplice_f_only(method as i32))
    }

    /// The C value.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Any C value, unknown bits included (the library refuses those with
    /// EINVAL).
    pub const fn from_bits_retain(bits: u32) -> Flags {
        Flags(bits)
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

/// What a successful move or copy did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Bytes taken from the input.
    pub in_bytes: u64,
    /// Bytes delivered to the output; 0 (with `in_bytes` 0) at the end of
    /// the input.
    pub out_bytes: u64,
    /// The mechanism that delivered them (for a copy, the last one that
    /// delivered any).
    pub method: Method,
}

impl Moved {
    fn from_result(res: &sys::psplice_result) -> Moved {
        Moved {
            in_bytes: res.in_bytes,
            out_bytes: res.out_bytes,
            method: Method::from_raw(res.method),
        }
    }
}

/// Offsets as the C calls take them. A `u64` past `i64::MAX` goes through
/// as the negative `int64_t` it is, which the library refuses with EINVAL
/// on that offset's side, as it refuses any negative offset; the offsets
/// are written back after the call whatever it returned, since the library
/// advances them by the bytes delivered even when it fails.
pub(crate) fn with_offsets<R>(
    off_in: Option<&mut u64>,
    off_out: Option<&mut u64>,
    call: impl FnOnce(*mut i64, *mut i64) -> R,
) -> R {
    let mut raw_in = off_in.as_deref().map(|&o| o as i64);
    let mut raw_out = off_out.as_deref().map(|&o| o as i64);
    let r = call(raw_ptr(&mut raw_in), raw_ptr(&mut raw_out));
    if let (Some(user), Some(raw)) = (off_in, raw_in) {
        *user = raw as u64;
    }
    if let (Some(user), Some(raw)) = (off_out, raw_out) {
        *user = raw as u64;
    }
    r
}

fn raw_ptr(off: &mut Option<i64>) -> *mut i64 {
    off.as_mut().map_or(std::ptr::null_mut(), |o| o as *mut i64)
}

/// Runs a C move or copy with the offsets and a fresh result. A negative
/// return is the error; any other is success, even when the result records
/// an error after some bytes went out with nothing parked (as with
/// write(2), the next call meets that error again).
pub(crate) fn run_move(
    off_in: Option<&mut u64>,
    off_out: Option<&mut u64>,
    call: impl FnOnce(*mut i64, *mut i64, *mut sys::psplice_result) -> isize,
) -> Result<Moved, Error> {
    let mut res = sys::psplice_result::default();
    let rc = with_offsets(off_in, off_out, |oi, oo| call(oi, oo, &mut res));
    if rc < 0 {
        return Err(Error::from_result(&res, io::Error::last_os_error()));
    }
    Ok(Moved::from_result(&res))
}

/// One step of up to `len` bytes from `fd_in` to `fd_out`, as splice(2)
/// takes one but for any pair of descriptors (psplice_ex(3)).
///
/// An offset of `None` uses and advances the file position; `Some` is
/// positional (the file position is untouched) and is advanced by the bytes
/// delivered. `Ok` with `out_bytes` 0 and `in_bytes` 0 is the end of the
/// input (or `len` 0).
#[doc(alias = "psplice_ex")]
pub fn step(
    fd_in: BorrowedFd<'_>,
    off_in: Option<&mut u64>,
    fd_out: BorrowedFd<'_>,
    off_out: Option<&mut u64>,
    len: usize,
    flags: Flags,
) -> Result<Moved, Error> {
    let (fd_in, fd_out) = (fd_in.as_raw_fd(), fd_out.as_raw_fd());
    // SAFETY: the fds are borrowed for the call; the offsets and the
    // result point to live locals.
    run_move(off_in, off_out, |oi, oo, res| unsafe {
        sys::psplice_ex(fd_in, oi, fd_out, oo, len, flags.0, res)
    })
}

/// Copy `len` bytes, or to the end of the input with [`TO_EOF`], retrying
/// EINTR and short transfers (psplice_copy(3)). Offsets as for [`step`].
#[doc(alias = "psplice_copy")]
pub fn copy(
    fd_in: BorrowedFd<'_>,
    off_in: Option<&mut u64>,
    fd_out: BorrowedFd<'_>,
    off_out: Option<&mut u64>,
    len: u64,
    flags: Flags,
) -> Result<Moved, Error> {
    let (fd_in, fd_out) = (fd_in.as_raw_fd(), fd_out.as_raw_fd());
    // SAFETY: as in step.
    run_move(off_in, off_out, |oi, oo, res| unsafe {
        sys::psplice_copy(fd_in, oi, fd_out, oo, len, flags.0, res) as isize
    })
}

/// "MAJOR.MINOR.PATCH" of the library that is running.
pub fn version() -> &'static str {
    // SAFETY: psplice_version returns a static string.
    unsafe { error::static_str(sys::psplice_version()) }
}
