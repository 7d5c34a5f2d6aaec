//! Fan-out: one input to many outputs through tee(2) (psplice_tee(3)).

use std::io;
use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};
use std::os::unix::io::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;

use crate::pair::{hand_back, take_all, DropHandler};
use crate::{sys, Error, Flags, Method};

/// What one sink of a tee got: for a step, that step's; for a copy, the
/// totals.
#[derive(Debug)]
pub struct SinkResult {
    /// Bytes of the stream taken for this sink.
    pub in_bytes: u64,
    /// Bytes delivered to it.
    pub out_bytes: u64,
    /// The path that delivered them.
    pub method: Method,
    /// Its failure (EPIPE, ENOSPC, ...; EAGAIN on [`Side::Out`] when it
    /// holds the input back), or `None`. A sink that failed is out of the
    /// tee; the others go on.
    ///
    /// [`Side::Out`]: crate::Side::Out
    pub error: Option<Error>,
}

/// One input, many outputs ("sinks"), as tee(1).
///
/// A sink that takes less than it was given keeps the rest pending and gets
/// it first on the next step. The C library drops what is still pending when
/// a tee is freed; this type does not: [`into_pending`](Tee::into_pending)
/// returns it, and a tee dropped holding bytes treats them as a [`Pair`]
/// does (the handler of [`on_drop_pending`](Tee::on_drop_pending), else a
/// panic in debug builds) — except the bytes of a sink that failed (EPIPE,
/// ENOSPC), which can never reach it: without a handler they go with it.
///
/// [`Pair`]: crate::Pair
pub struct Tee<'fd> {
    raw: NonNull<sys::psplice_tee>,
    results: Vec<sys::psplice_result>,
    on_drop: Option<DropHandler<'fd>>,
    _fds: PhantomData<BorrowedFd<'fd>>,
}

// SAFETY: the tee's moves take turns under its own lock; its results are
// reached through &mut self only.
unsafe impl Send for Tee<'_> {}

impl<'fd> Tee<'fd> {
    /// Classify `fd_in` and the sinks once (1 to 1024 of them; one fd may
    /// appear more than once). `hold_max`: how far a non-blocking sink may
    /// fall behind before the tee stops reading (0: at once). `flags`:
    /// NOFALLBACK, SIGPIPE_IGNORED.
    #[doc(alias = "psplice_tee_new")]
    pub fn new(
        fd_in: BorrowedFd<'fd>,
        sinks: &[BorrowedFd<'fd>],
        hold_max: usize,
        flags: Flags,
    ) -> Result<Tee<'fd>, Error> {
        let fds: Vec<c_int> = sinks.iter().map(|fd| fd.as_raw_fd()).collect();
        // SAFETY: fds holds n descriptors, borrowed for the tee's life.
        let raw = unsafe {
            sys::psplice_tee_new(
                fd_in.as_raw_fd(),
                fds.as_ptr(),
                fds.len(),
                hold_max,
                flags.bits(),
            )
        };
        match NonNull::new(raw) {
            Some(raw) => Ok(Tee {
                raw,
                results: vec![sys::psplice_result::default(); fds.len()],
                on_drop: None,
                _fds: PhantomData,
            }),
            None => Err(Error::last(io::Error::last_os_error())),
        }
    }

    /// The number of sinks.
    pub fn len(&self) -> usize {
        self.results.len()
    }

    /// Never true: a tee has at least one sink.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// One step: take up to `len` bytes (at most a pipe's worth) and deliver
    /// them, after any pending bytes, to every sink still in. Returns the
    /// bytes taken, 0 at the end once nothing is pending. `flags`: NONBLOCK,
    /// MORE. Each sink's result is then in [`sinks`](Tee::sinks).
    #[doc(alias = "psplice_tee_move")]
    pub fn step(&mut self, len: usize, flags: Flags) -> Result<u64, Error> {
        // SAFETY: the tee is live; res holds one result per sink.
        self.run(|t, res| unsafe { sys::psplice_tee_move(t, len, flags.bits(), res) })
    }

    /// Steps until `len` bytes were taken ([`TO_EOF`](crate::TO_EOF): the
    /// end of input), or the input fails or no sink is left. `Ok` when every
    /// sink got every byte; otherwise the input's error, or else the first
    /// sink's, with the totals per sink in [`sinks`](Tee::sinks).
    #[doc(alias = "psplice_tee_copy")]
    pub fn copy(&mut self, len: u64, flags: Flags) -> Result<(), Error> {
        // SAFETY: as in step.
        self.run(|t, res| unsafe { sys::psplice_tee_copy(t, len, flags.bits(), res) as isize })?;
        Ok(())
    }

    /// The results of the last step or copy, one per sink.
    pub fn sinks(&self) -> Vec<SinkResult> {
        self.results.iter().map(sink_result).collect()
    }

    /// The bytes pending for sink `i` (0 for `i` out of range).
    #[doc(alias = "psplice_tee_pending")]
    pub fn pending(&self, i: usize) -> usize {
        // SAFETY: the tee is live; the library checks i.
        unsafe { sys::psplice_tee_pending(self.raw.as_ptr(), i) }
    }

    /// Hand up to `buf.len()` of sink `i`'s pending bytes, the oldest first,
    /// to `buf`: they are no longer the tee's. Returns how many.
    #[doc(alias = "psplice_tee_take")]
    pub fn take(&self, i: usize, buf: &mut [u8]) -> usize {
        // SAFETY: buf is writable for its length.
        unsafe {
            sys::psplice_tee_take(
                self.raw.as_ptr(),
                i,
                buf.as_mut_ptr() as *mut c_void,
                buf.len(),
            )
        }
    }

    /// End the tee and return what each sink had pending, by sink.
    pub fn into_pending(mut self) -> Vec<Vec<u8>> {
        self.on_drop = None;
        (0..self.len())
            .map(|i| take_all(|buf| self.take(i, buf), || self.pending(i)))
            .collect()
    }

    /// Give the bytes still pending when the tee is dropped, every sink's
    /// one after the other, to `handler`.
    pub fn on_drop_pending(&mut self, handler: impl FnOnce(Vec<u8>) + Send + 'fd) {
        self.on_drop = Some(Box::new(handler));
    }
}

impl Tee<'_> {
    /// Runs a C step or copy on the tee and its results; a negative return
    /// is the error psplice_last() holds.
    fn run(
        &mut self,
        call: impl FnOnce(*mut sys::psplice_tee, *mut sys::psplice_result) -> isize,
    ) -> Result<u64, Error> {
        let n = call(self.raw.as_ptr(), self.results.as_mut_ptr());
        if n < 0 {
            return Err(Error::last(io::Error::last_os_error()));
        }
        Ok(n as u64)
    }

    /// Whether sink i is out: its last result holds an error other than a
    /// wait or an interruption (a sink that failed says so again on every
    /// later step).
    fn sink_failed(&self, i: usize) -> bool {
        let kind = io::Error::from_raw_os_error(self.results[i].error).kind();
        self.results[i].error != 0
            && kind != io::ErrorKind::WouldBlock
            && kind != io::ErrorKind::Interrupted
    }
}

fn sink_result(res: &sys::psplice_result) -> SinkResult {
    // A sink's result never parks: a tee keeps what a sink could not take.
    let own = sys::psplice_result {
        parked: std::ptr::null(),
        parked_len: 0,
        ..*res
    };
    let error = match res.error {
        0 => None,
        e => Some(Error::from_result(&own, io::Error::from_raw_os_error(e))),
    };
    SinkResult {
        in_bytes: res.in_bytes,
        out_bytes: res.out_bytes,
        method: Method::from_raw(res.method),
        error,
    }
}

impl Drop for Tee<'_> {
    fn drop(&mut self) {
        let handler = self.on_drop.take();
        let mut bytes = Vec::new();
        for i in 0..self.len() {
            // A sink that failed is out of the tee: what it still held can
            // never reach it, and goes with it unless a handler wants it.
            if handler.is_some() || !self.sink_failed(i) {
                bytes.extend(take_all(|buf| self.take(i, buf), || self.pending(i)));
            }
        }
        // SAFETY: the tee is live and freed once.
        unsafe { sys::psplice_tee_free(self.raw.as_ptr()) };
        hand_back(bytes, handler, "a Tee");
    }
}
