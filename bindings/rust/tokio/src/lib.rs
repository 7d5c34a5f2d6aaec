//! psplice on tokio: move bytes between two non-blocking descriptors
//! registered with the runtime, waiting for exactly the side an `EAGAIN`
//! names — the input to become readable, or the output writable.
//!
//! A splice relay that cannot tell the sides apart waits for both, and
//! wakes for an input that has data while the output is still full; psplice
//! says which one blocked ([`psplice::Error::wait_for`]), so a direction
//! waits on one [`AsyncFd`] at a time.
//!
//! ```no_run
//! use std::net::TcpStream;
//! use tokio::io::unix::AsyncFd;
//!
//! # async fn f(client: TcpStream, server: TcpStream) -> std::io::Result<()> {
//! client.set_nonblocking(true)?;
//! server.set_nonblocking(true)?;
//! let (a, b) = (AsyncFd::new(client)?, AsyncFd::new(server)?);
//! let (up, down) = psplice_tokio::relay(&a, &b).await?;
//! eprintln!("{} bytes up, {} down", up.bytes, down.bytes);
//! # Ok(())
//! # }
//! ```

use std::io;
use std::os::raw::c_int;
use std::os::unix::io::{AsFd, AsRawFd};

use psplice::{Flags, Pair, Side};
use tokio::io::unix::AsyncFd;

/// The most one step asks for: what a grown pipe holds.
const STEP: usize = 1 << 20;

/// Steps made in a row, without waiting, before the task lets others run:
/// a direction that never meets EAGAIN would otherwise keep its thread.
const STEPS_BEFORE_YIELD: u32 = 32;

/// What one direction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forwarded {
    /// Bytes delivered to the output.
    pub bytes: u64,
    /// Times it waited for the input to become readable.
    pub waited_in: u64,
    /// Times it waited for the output to become writable: the output was
    /// full, with bytes pending in the pair.
    pub waited_out: u64,
}

/// Moves from the pair's input to its output until the input ends and
/// nothing is pending. `from` and `to` are the pair's two descriptors,
/// non-blocking, registered with the runtime.
///
/// A failure is returned as an `io::Error` holding the whole
/// [`psplice::Error`] (get it with [`psplice::Error::from_io`]): EPIPE on
/// side out when the output's reader went away. The bytes the pair still
/// holds then stay in it, for the caller to take or drop; they stay there
/// too when the future is dropped before it completes.
pub async fn forward<R: AsRawFd, W: AsRawFd>(
    pair: &Pair<'_>,
    from: &AsyncFd<R>,
    to: &AsyncFd<W>,
) -> io::Result<Forwarded> {
    let mut done = Forwarded::default();
    let mut steps = 0;
    loop {
        match pair.step(None, None, STEP, Flags::NONBLOCK) {
            Ok(m) if m.in_bytes == 0 && m.out_bytes == 0 => return Ok(done),
            Ok(m) => {
                done.bytes += m.out_bytes;
                steps += 1;
                if steps == STEPS_BEFORE_YIELD {
                    steps = 0;
                    tokio::task::yield_now().await;
                }
            }
            Err(e) => {
                steps = 0;
                // The readiness tokio cached is cleared before the next
                // step, so a step that meets EAGAIN again waits for a new
                // event, and one that came meanwhile is not lost.
                match e.wait_for() {
                    Some(Side::In) => {
                        from.readable().await?.clear_ready();
                        done.waited_in += 1;
                    }
                    Some(Side::Out) => {
                        to.writable().await?.clear_ready();
                        done.waited_out += 1;
                    }
                    _ => return Err(e.into()),
                }
            }
        }
    }
}

/// Relays between `a` and `b` in both directions, each on a pair of its
/// own, until both inputs have ended; the end of one is passed on with a
/// shutdown of writing on the other. Returns what went from `a` to `b` and
/// from `b` to `a`.
///
/// The first failure ends the relay and is returned (see [`forward`]); the
/// bytes then still pending in either direction are dropped with the
/// connection, since the relay cannot deliver them. So are they when the
/// future is dropped before it completes.
pub async fn relay<A, B>(a: &AsyncFd<A>, b: &AsyncFd<B>) -> io::Result<(Forwarded, Forwarded)>
where
    A: AsFd + AsRawFd,
    B: AsFd + AsRawFd,
{
    let (fa, fb) = (a.get_ref().as_fd(), b.get_ref().as_fd());
    let mut up = Pair::new(fa, fb, Flags::NONE)?;
    let mut down = Pair::new(fb, fa, Flags::NONE)?;
    // The pairs hold bytes when the relay failed, and when its future is
    // dropped before the end (a timeout, a task aborted): either way the
    // connection is given up, and the bytes with it.
    up.on_drop_pending(drop);
    down.on_drop_pending(drop);
    tokio::try_join!(half(&up, a, b), half(&down, b, a))
}

/// One direction of a relay, then the end passed on.
async fn half<R: AsRawFd, W: AsRawFd>(
    pair: &Pair<'_>,
    from: &AsyncFd<R>,
    to: &AsyncFd<W>,
) -> io::Result<Forwarded> {
    let done = forward(pair, from, to).await?;
    shut_write(to.as_raw_fd());
    Ok(done)
}

extern "C" {
    fn shutdown(fd: c_int, how: c_int) -> c_int;
}

const SHUT_WR: c_int = 1;

/// Tells the peer no more bytes come. Its failure is left alone: a peer
/// already gone (ENOTCONN) or an output that is no socket (ENOTSOCK) needs
/// no end passed on.
fn shut_write(fd: c_int) {
    // SAFETY: shutdown(2) on a descriptor the caller keeps open.
    unsafe { shutdown(fd, SHUT_WR) };
}
