//! Range sync with the level it truly reached (psplice_sync(3)), and
//! write-behind for long sequential writers (psplice_wb_new(3)).

use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::ops::BitOr;
use std::os::raw::c_int;
use std::os::unix::io::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;

use crate::error::static_str;
use crate::sys;

/// The flags of a range sync (PSPLICE_SYNC_*), combined with `|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SyncFlags(u32);

impl SyncFlags {
    /// Wait for writeback of the range already under way.
    pub const WAIT_BEFORE: SyncFlags = SyncFlags(sys::PSPLICE_SYNC_WAIT_BEFORE);
    /// Start writeback of the range's dirty pages.
    pub const WRITE: SyncFlags = SyncFlags(sys::PSPLICE_SYNC_WRITE);
    /// Wait for that writeback to finish.
    pub const WAIT_AFTER: SyncFlags = SyncFlags(sys::PSPLICE_SYNC_WAIT_AFTER);
    /// Data durable: the data and the metadata needed to read it back
    /// (fdatasync class), for the whole file.
    pub const DATA: SyncFlags = SyncFlags(sys::PSPLICE_SYNC_DATA);
    /// File durable: all metadata too (fsync class).
    pub const METADATA: SyncFlags = SyncFlags(sys::PSPLICE_SYNC_METADATA);

    /// The C value.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Any C value, unknown bits included (refused with EINVAL).
    pub const fn from_bits_retain(bits: u32) -> SyncFlags {
        SyncFlags(bits)
    }
}

impl BitOr for SyncFlags {
    type Output = SyncFlags;
    fn bitor(self, rhs: SyncFlags) -> SyncFlags {
        SyncFlags(self.0 | rhs.0)
    }
}

/// What a sync truly achieved, weakest to strongest (enum
/// psplice_sync_level); levels compare in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Nothing was done (or the file lives in memory alone, as on tmpfs).
    None = 0,
    /// Writeback started.
    Submitted = 1,
    /// Handed to the device; may sit in its cache.
    Written = 2,
    /// fdatasync(2) returned 0.
    DataDurable = 3,
    /// fsync(2) returned 0.
    FileDurable = 4,
}

impl Level {
    fn from_raw(level: c_int) -> Level {
        match level {
            1 => Level::Submitted,
            2 => Level::Written,
            3 => Level::DataDurable,
            4 => Level::FileDurable,
            _ => Level::None,
        }
    }

    /// "none", "submitted", "written", "data-durable", "file-durable".
    pub fn name(self) -> &'static str {
        // SAFETY: psplice_sync_level_name returns a static string.
        unsafe { static_str(sys::psplice_sync_level_name(self as c_int)) }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed sync: the error, and the level reached all the same.
#[derive(Debug)]
pub struct SyncError {
    /// The errno (EIO, ENOSPC, EDQUOT: a writeback error, now or earlier on
    /// this descriptor; EINVAL, EBADF, ESPIPE).
    pub error: io::Error,
    /// What was reached before the failure.
    pub achieved: Level,
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (reached {})", self.error, self.achieved)
    }
}

impl std::error::Error for SyncError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<SyncError> for io::Error {
    fn from(e: SyncError) -> io::Error {
        e.error
    }
}

fn level_result(rc: c_int, achieved: c_int) -> Result<Level, SyncError> {
    let level = Level::from_raw(achieved);
    if rc < 0 {
        return Err(SyncError {
            error: io::Error::last_os_error(),
            achieved: level,
        });
    }
    Ok(level)
}

/// sync_file_range(2) semantics on `[offset, offset + nbytes)` (`nbytes` 0:
/// to the end of the file), then fdatasync or fsync for DATA or METADATA.
/// Returns the level truly reached; a failure says it too.
#[doc(alias = "psplice_sync")]
pub fn sync(
    fd: BorrowedFd<'_>,
    offset: u64,
    nbytes: u64,
    flags: SyncFlags,
) -> Result<Level, SyncError> {
    let mut achieved: c_int = 0;
    // A u64 past i64::MAX is passed as the negative value the library
    // refuses with EINVAL.
    // SAFETY: plain call on a borrowed fd; achieved is a local.
    let rc = unsafe {
        sys::psplice_sync(
            fd.as_raw_fd(),
            offset as i64,
            nbytes as i64,
            flags.0,
            &mut achieved,
        )
    };
    level_result(rc, achieved)
}

/// Write-behind: after each write, say what was written; each full chunk is
/// submitted for writeback, the chunk before it waited for and dropped from
/// the page cache, so a long writer's dirty memory stays a few chunks.
///
/// [`finish`](WriteBehind::finish) writes back the rest and reports the
/// first error; dropping it does the same and discards the error.
pub struct WriteBehind<'fd> {
    raw: Option<NonNull<sys::psplice_wb>>,
    _fd: PhantomData<BorrowedFd<'fd>>,
}

// SAFETY: the state is used by one thread at a time (&mut self).
unsafe impl Send for WriteBehind<'_> {}

impl<'fd> WriteBehind<'fd> {
    /// Start write-behind on `fd`, a regular file or block device, with
    /// chunks of `chunk` bytes (0: 8 MiB). `keep_cache` keeps written
    /// chunks in the page cache (PSPLICE_WB_KEEP_CACHE).
    #[doc(alias = "psplice_wb_new")]
    pub fn new(
        fd: BorrowedFd<'fd>,
        chunk: usize,
        keep_cache: bool,
    ) -> io::Result<WriteBehind<'fd>> {
        let flags = if keep_cache {
            sys::PSPLICE_WB_KEEP_CACHE
        } else {
            0
        };
        // SAFETY: plain call on a borrowed fd that outlives the state.
        let raw = unsafe { sys::psplice_wb_new(fd.as_raw_fd(), chunk, flags) };
        match NonNull::new(raw) {
            Some(raw) => Ok(WriteBehind {
                raw: Some(raw),
                _fd: PhantomData,
            }),
            None => Err(io::Error::last_os_error()),
        }
    }

    /// After each write of `[offset, offset + len)`. The first writeback
    /// error is returned, and again by every later call.
    #[doc(alias = "psplice_wb_wrote")]
    pub fn wrote(&mut self, offset: u64, len: usize) -> io::Result<()> {
        let raw = self.raw.expect("write-behind used after finish");
        // SAFETY: the state is live until finish or drop.
        if unsafe { sys::psplice_wb_wrote(raw.as_ptr(), offset as i64, len) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Write back what is left, then sync with `sync_flags` when they are
    /// not empty. Without them, the level is the weakest any chunk reached.
    #[doc(alias = "psplice_wb_finish")]
    pub fn finish(mut self, sync_flags: SyncFlags) -> Result<Level, SyncError> {
        let raw = self.raw.take().expect("write-behind finished twice");
        let mut achieved: c_int = 0;
        // SAFETY: the state is live and freed by this call.
        let rc = unsafe { sys::psplice_wb_finish(raw.as_ptr(), sync_flags.0, &mut achieved) };
        level_result(rc, achieved)
    }
}

impl Drop for WriteBehind<'_> {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            // SAFETY: the state is live and freed once.
            unsafe { sys::psplice_wb_finish(raw.as_ptr(), 0, std::ptr::null_mut()) };
        }
    }
}
