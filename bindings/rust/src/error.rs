//! What a failed call says: the errno, the side it belongs to, the counts
//! and the bytes taken that could not be delivered.

use std::ffi::CStr;
use std::fmt;
use std::io;
use std::os::raw::c_int;

use crate::sys;

/// Which descriptor an error, or a wait, belongs to (enum psplice_side).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The call itself was refused, or no mechanism could be set up.
    None,
    /// Reading the input failed, or would block: wait for it to be readable.
    In,
    /// Writing the output failed, or would block: wait for it to be writable.
    Out,
}

impl Side {
    pub(crate) fn from_raw(side: c_int) -> Side {
        match side {
            sys::PSPLICE_SIDE_IN => Side::In,
            sys::PSPLICE_SIDE_OUT => Side::Out,
            _ => Side::None,
        }
    }

    /// "none", "in" or "out", as psplice_side_name() says.
    pub fn name(self) -> &'static str {
        match self {
            Side::None => "none",
            Side::In => "in",
            Side::Out => "out",
        }
    }
}

/// The mechanism that moved the bytes (enum psplice_method).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// No byte was delivered.
    None = 0,
    /// FICLONERANGE: extents shared.
    Clone = 1,
    /// copy_file_range(2).
    CopyFileRange = 2,
    /// sendfile(2).
    Sendfile = 3,
    /// splice(2), one side a pipe.
    Splice = 4,
    /// splice(2) through an internal pipe.
    SplicePipe = 5,
    /// vmsplice(2) (reserved by the library).
    Vmsplice = 6,
    /// read(2)/write(2) through user memory.
    ReadWrite = 7,
}

impl Method {
    pub(crate) fn from_raw(method: c_int) -> Method {
        const ALL: [Method; 8] = [
            Method::None,
            Method::Clone,
            Method::CopyFileRange,
            Method::Sendfile,
            Method::Splice,
            Method::SplicePipe,
            Method::Vmsplice,
            Method::ReadWrite,
        ];
        usize::try_from(method)
            .ok()
            .and_then(|i| ALL.get(i).copied())
            .unwrap_or(Method::None)
    }

    /// The library's name for it: "clone", "copy_file_range", ..., "none".
    pub fn name(self) -> &'static str {
        // SAFETY: psplice_method_name returns a static string for any value.
        unsafe { static_str(sys::psplice_method_name(self as c_int)) }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string the library keeps for the life of the process.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that is never freed.
pub(crate) unsafe fn static_str(p: *const std::os::raw::c_char) -> &'static str {
    if p.is_null() {
        return "?";
    }
    CStr::from_ptr(p).to_str().unwrap_or("?")
}

/// A failed move or copy, with everything the C result says.
///
/// Nothing taken is lost: bytes that were taken from a non-seekable input
/// (a pipe, a socket) and could not be delivered are in [`parked`], copied
/// out of the library's thread-local buffer before the call returned.
///
/// [`parked`]: Error::parked
#[derive(Debug)]
pub struct Error {
    errno: i32,
    side: Side,
    in_bytes: u64,
    out_bytes: u64,
    method: Method,
    parked: Vec<u8>,
}

impl Error {
    /// Reads a C result, taking a copy of its parked bytes. `fallback` is the
    /// errno the call left, for a result that carries none.
    pub(crate) fn from_result(res: &sys::psplice_result, fallback: io::Error) -> Error {
        let parked = if res.parked.is_null() || res.parked_len == 0 {
            Vec::new()
        } else {
            // SAFETY: the library keeps parked_len bytes at parked until this
            // thread's next call, and no call has been made since.
            unsafe { std::slice::from_raw_parts(res.parked as *const u8, res.parked_len) }.to_vec()
        };
        let errno = match res.error {
            0 => fallback.raw_os_error().unwrap_or(0),
            e => e,
        };
        Error {
            errno,
            side: Side::from_raw(res.side),
            in_bytes: res.in_bytes,
            out_bytes: res.out_bytes,
            method: Method::from_raw(res.method),
            parked,
        }
    }

    /// The error of this thread's last call, as psplice_last() holds it.
    pub(crate) fn last(fallback: io::Error) -> Error {
        // SAFETY: psplice_last never returns NULL, and the result it points
        // to stays until this thread's next call.
        let res = unsafe { *sys::psplice_last() };
        Error::from_result(&res, fallback)
    }

    /// The errno, as `errno` held it when the call returned.
    pub fn errno(&self) -> i32 {
        self.errno
    }

    /// The descriptor the error belongs to.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Bytes taken from the input by the failed call.
    pub fn in_bytes(&self) -> u64 {
        self.in_bytes
    }

    /// Bytes delivered to the output by the failed call.
    pub fn out_bytes(&self) -> u64 {
        self.out_bytes
    }

    /// The mechanism that delivered bytes before the failure, if any did.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Bytes taken from the input and not delivered, in order: the caller
    /// writes them out itself. Empty when the input was seekable (its offset
    /// was left just past the last byte delivered) or nothing was taken.
    pub fn parked(&self) -> &[u8] {
        &self.parked
    }

    /// The parked bytes, by value.
    pub fn into_parked(self) -> Vec<u8> {
        self.parked
    }

    /// For EAGAIN, the side to wait for: readability of the input for
    /// [`Side::In`], writability of the output for [`Side::Out`]. `None` for
    /// any other error.
    pub fn wait_for(&self) -> Option<Side> {
        if self.kind() == io::ErrorKind::WouldBlock {
            Some(self.side)
        } else {
            None
        }
    }

    /// The kind of the errno, as `std::io::Error` sorts it.
    pub fn kind(&self) -> io::ErrorKind {
        io::Error::from_raw_os_error(self.errno).kind()
    }

    /// A `std::io::Error` with this errno alone (its `raw_os_error()` is
    /// set), leaving the counts and parked bytes here.
    pub fn to_io_error(&self) -> io::Error {
        io::Error::from_raw_os_error(self.errno)
    }

    /// The psplice error inside an `io::Error` made by `From<Error>`.
    pub fn from_io(e: &io::Error) -> Option<&Error> {
        e.get_ref().and_then(|inner| inner.downcast_ref::<Error>())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (side {}; {} bytes taken, {} delivered",
            self.to_io_error(),
            self.side.name(),
            self.in_bytes,
            self.out_bytes
        )?;
        if !self.parked.is_empty() {
            write!(f, ", {} parked", self.parked.len())?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for Error {}

/// Keeps the whole error, parked bytes included, inside the `io::Error`
/// (get it back with [`Error::from_io`]); the kind is the errno's. Use
/// [`Error::to_io_error`] for an `io::Error` whose `raw_os_error()` is set.
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}
