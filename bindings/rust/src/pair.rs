//! A prepared pair (psplice_pair_new(3)): two descriptors classified once
//! for many moves, holding what the output could not take as pending bytes.

use std::io;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::os::unix::io::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;

use crate::{run_move, sys, Error, Flags, Moved};

/// What receives the bytes a dropped pair or tee still held.
pub(crate) type DropHandler<'fd> = Box<dyn FnOnce(Vec<u8>) + Send + 'fd>;

/// Two descriptors prepared for many moves: the two directions of a relayed
/// connection, or a file sent to one socket in pieces.
///
/// A pair whose input is not seekable never parks: bytes it took and could
/// not deliver are *pending* in the pair, and its next move delivers them
/// first. A move that delivers none of them fails on [`Side::Out`]
/// (`EAGAIN` when the output is full), so an event loop waits for the
/// output alone.
///
/// # Dropping a pair that holds bytes
///
/// The C library's free hands pending bytes back, never drops them; a
/// destructor cannot return them. So take them before the pair goes:
/// [`into_pending`](Pair::into_pending) ends the pair and returns them, and
/// [`take`](Pair::take) hands them over piecemeal. A pair dropped while
/// it still holds bytes gives them to the handler set by
/// [`on_drop_pending`](Pair::on_drop_pending); without one, it is a bug in
/// the program: debug builds panic (unless already panicking) and release
/// builds say how many bytes were lost on standard error. A panic rather
/// than a silent loss, because a relay that drops a pair mid-stream with
/// bytes in it corrupts the stream it relays.
///
/// [`Side::Out`]: crate::Side::Out
pub struct Pair<'fd> {
    raw: NonNull<sys::psplice_pair>,
    on_drop: Option<DropHandler<'fd>>,
    _fds: PhantomData<BorrowedFd<'fd>>,
}

// SAFETY: the library lets threads share a pair (moves on a pair with a
// non-seekable input take turns under its lock); the drop handler is only
// reached through &mut self.
unsafe impl Send for Pair<'_> {}
unsafe impl Sync for Pair<'_> {}

impl<'fd> Pair<'fd> {
    /// Classify the two descriptors and plan the path once. `flags` holds
    /// the planning flags: REFLINK, NOFALLBACK, `Flags::only`, and
    /// SIGPIPE_IGNORED.
    #[doc(alias = "psplice_pair_new")]
    pub fn new(
        fd_in: BorrowedFd<'fd>,
        fd_out: BorrowedFd<'fd>,
        flags: Flags,
    ) -> Result<Pair<'fd>, Error> {
        // SAFETY: plain call on borrowed fds; the pair does not outlive them.
        let raw =
            unsafe { sys::psplice_pair_new(fd_in.as_raw_fd(), fd_out.as_raw_fd(), flags.bits()) };
        match NonNull::new(raw) {
            Some(raw) => Ok(Pair {
                raw,
                on_drop: None,
                _fds: PhantomData,
            }),
            None => Err(Error::last(io::Error::last_os_error())),
        }
    }

    /// One step of up to `len` bytes, pending bytes first
    /// (psplice_pair_move(3)). `flags`: NONBLOCK, MORE, MOVE. Offsets as
    /// for [`step`](crate::step).
    #[doc(alias = "psplice_pair_move")]
    #[doc(alias = "move")]
    pub fn step(
        &self,
        off_in: Option<&mut u64>,
        off_out: Option<&mut u64>,
        len: usize,
        flags: Flags,
    ) -> Result<Moved, Error> {
        let raw = self.raw.as_ptr();
        // SAFETY: the pair is live; the offsets and the result point to
        // live locals.
        run_move(off_in, off_out, |oi, oo, res| unsafe {
            sys::psplice_pair_move(raw, oi, oo, len, flags.bits(), res)
        })
    }

    /// Copy `len` bytes or to the end ([`TO_EOF`](crate::TO_EOF)), pending
    /// bytes first, counted in `out_bytes` and `len` (psplice_pair_copy(3)).
    #[doc(alias = "psplice_pair_copy")]
    pub fn copy(
        &self,
        off_in: Option<&mut u64>,
        off_out: Option<&mut u64>,
        len: u64,
        flags: Flags,
    ) -> Result<Moved, Error> {
        let raw = self.raw.as_ptr();
        // SAFETY: as in step.
        run_move(off_in, off_out, |oi, oo, res| unsafe {
            sys::psplice_pair_copy(raw, oi, oo, len, flags.bits(), res) as isize
        })
    }

    /// The bytes the pair holds pending (0 when its input is seekable).
    #[doc(alias = "psplice_pair_pending")]
    pub fn pending(&self) -> usize {
        // SAFETY: the pair is live.
        unsafe { sys::psplice_pair_pending(self.raw.as_ptr()) }
    }

    /// Hand up to `buf.len()` pending bytes, the oldest first, to `buf`:
    /// they are no longer the pair's. Returns how many.
    #[doc(alias = "psplice_pair_take")]
    pub fn take(&self, buf: &mut [u8]) -> usize {
        // SAFETY: buf is writable for its length.
        unsafe {
            sys::psplice_pair_take(
                self.raw.as_ptr(),
                buf.as_mut_ptr() as *mut c_void,
                buf.len(),
            )
        }
    }

    /// Every pending byte, the oldest first.
    pub fn take_all(&self) -> Vec<u8> {
        take_all(|buf| self.take(buf), || self.pending())
    }

    /// End the pair and return what it held pending.
    pub fn into_pending(mut self) -> Vec<u8> {
        let bytes = self.take_all();
        self.on_drop = None;
        bytes
    }

    /// Give the bytes still pending when the pair is dropped to `handler`
    /// (it is not called when none are).
    pub fn on_drop_pending(&mut self, handler: impl FnOnce(Vec<u8>) + Send + 'fd) {
        self.on_drop = Some(Box::new(handler));
    }
}

/// Takes in rounds until nothing is left: a round takes what `pending` said,
/// and the count may have grown meanwhile if other threads move.
pub(crate) fn take_all(
    mut take: impl FnMut(&mut [u8]) -> usize,
    pending: impl Fn() -> usize,
) -> Vec<u8> {
    let mut bytes = Vec::new();
    loop {
        let want = pending();
        if want == 0 {
            return bytes;
        }
        let at = bytes.len();
        bytes.resize(at + want, 0);
        let got = take(&mut bytes[at..]);
        bytes.truncate(at + got);
        if got == 0 {
            return bytes;
        }
    }
}

/// What a pair or tee does with bytes it still held when dropped: see
/// "Dropping a pair that holds bytes" on [`Pair`].
pub(crate) fn hand_back(bytes: Vec<u8>, handler: Option<DropHandler<'_>>, what: &str) {
    if bytes.is_empty() {
        return;
    }
    if let Some(handler) = handler {
        handler(bytes);
        return;
    }
    if cfg!(debug_assertions) && !std::thread::panicking() {
        panic!(
            "psplice: {what} dropped holding {} pending bytes; take them first (into_pending)",
            bytes.len()
        );
    }
    eprintln!(
        "psplice: {what} dropped holding {} pending bytes, lost",
        bytes.len()
    );
}

impl Drop for Pair<'_> {
    fn drop(&mut self) {
        let bytes = self.take_all();
        // SAFETY: the pair is live and freed once; with nothing pending the
        // free leaves psplice_last() alone.
        unsafe { sys::psplice_pair_free(self.raw.as_ptr()) };
        hand_back(bytes, self.on_drop.take(), "a Pair");
    }
}
