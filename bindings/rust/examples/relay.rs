//! A TCP relay on a plain poll(2) loop, using only the standard library and
//! the crate: each direction is a Pair, moved without blocking, and a move
//! that cannot go on names the side to wait for — the input to be readable
//! or the output to be writable — so the loop polls exactly that.
//!
//!     cargo run --example relay -- 127.0.0.1:8080 127.0.0.1:80 [connections]
//!
//! Connections are served one after the other (the count, if given, is how
//! many before it exits). A listening port of 0 takes a free one; the first
//! line on standard error names it.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::raw::{c_int, c_ulong};
use std::os::unix::io::{AsFd, AsRawFd, BorrowedFd};

use psplice::{Flags, Pair, Side};

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: i16,
    revents: i16,
}

const POLLIN: i16 = 0x1;
const POLLOUT: i16 = 0x4;

extern "C" {
    fn poll(fds: *mut PollFd, n: c_ulong, timeout: c_int) -> c_int;
}

/// One direction of the connection.
struct Direction<'fd> {
    pair: Pair<'fd>,
    from: BorrowedFd<'fd>,
    to: &'fd TcpStream,
    /// What the last move waits for, or None to move now.
    wait: Option<PollFd>,
    done: bool,
    moved: u64,
}

impl<'fd> Direction<'fd> {
    fn new(from: &'fd TcpStream, to: &'fd TcpStream) -> io::Result<Direction<'fd>> {
        // The Rust runtime ignores SIGPIPE: the pair may skip its guard.
        let pair = Pair::new(from.as_fd(), to.as_fd(), Flags::SIGPIPE_IGNORED)?;
        Ok(Direction {
            pair,
            from: from.as_fd(),
            to,
            wait: None,
            done: false,
            moved: 0,
        })
    }

    /// Moves until a move would wait, the input ends, or the relay fails.
    fn run(&mut self) -> io::Result<()> {
        while !self.done && self.wait.is_none() {
            match self.pair.step(None, None, 1 << 20, Flags::NONBLOCK) {
                Ok(m) if m.in_bytes == 0 && m.out_bytes == 0 => {
                    // The end comes only once nothing is pending: forward it.
                    self.done = true;
                    let _ = self.to.shutdown(Shutdown::Write);
                }
                Ok(m) => self.moved += m.out_bytes,
                Err(e) => match e.wait_for() {
                    Some(Side::In) => {
                        self.wait = Some(PollFd {
                            fd: self.from.as_raw_fd(),
                            events: POLLIN,
                            revents: 0,
                        })
                    }
                    Some(_) => {
                        self.wait = Some(PollFd {
                            fd: self.to.as_raw_fd(),
                            events: POLLOUT,
                            revents: 0,
                        })
                    }
                    None => {
                        self.done = true;
                        eprintln!(
                            "relay: {e}; {} bytes pending dropped with the connection",
                            self.pair.take_all().len()
                        );
                        return Err(e.into());
                    }
                },
            }
        }
        Ok(())
    }
}

/// Relays one connection in both directions until both have ended.
fn serve(client: TcpStream, server: TcpStream) -> io::Result<(u64, u64)> {
    let mut dirs = [
        Direction::new(&client, &server)?,
        Direction::new(&server, &client)?,
    ];
    loop {
        for d in dirs.iter_mut() {
            d.run()?;
        }
        if dirs.iter().all(|d| d.done) {
            return Ok((dirs[0].moved, dirs[1].moved));
        }
        let mut fds: Vec<PollFd> = dirs.iter_mut().filter_map(|d| d.wait.take()).collect();
        // SAFETY: fds is a live array of fds.len() pollfd structures.
        if unsafe { poll(fds.as_mut_ptr(), fds.len() as c_ulong, -1) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: relay LISTEN-ADDR TARGET-ADDR [CONNECTIONS]");
        std::process::exit(2);
    }
    let listener = TcpListener::bind(&args[1])?;
    eprintln!("relay: listening on {}", listener.local_addr()?);
    let count: Option<u64> = args
        .get(3)
        .map(|n| n.parse().expect("a number of connections"));
    let mut served = 0;
    while count.map_or(true, |n| served < n) {
        let (client, peer) = listener.accept()?;
        let server = TcpStream::connect(&args[2])?;
        for s in [&client, &server] {
            s.set_nonblocking(true)?;
        }
        match serve(client, server) {
            Ok((up, down)) => eprintln!("relay: {peer}: {up} bytes up, {down} down"),
            Err(e) => eprintln!("relay: {peer}: {e}"),
        }
        served += 1;
    }
    Ok(())
}
