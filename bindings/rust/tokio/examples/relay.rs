//! A TCP relay on tokio: each connection is a task relaying both ways with
//! psplice_tokio::relay, which waits for the side EAGAIN names.
//!
//!     cargo run --example relay -- 127.0.0.1:8080 127.0.0.1:80 [connections]
//!
//! Connections are served at the same time; the count, if given, is how
//! many it accepts before it waits for them and exits. A listening port of
//! 0 takes a free one; the first line on standard error names it.

use std::io;

use tokio::io::unix::AsyncFd;
use tokio::net::TcpListener;

/// Relays one connection; the streams are closed when it ends.
async fn serve(client: tokio::net::TcpStream, target: String) -> io::Result<String> {
    let server = tokio::net::TcpStream::connect(&target).await?;
    // Out of tokio's own streams and into AsyncFds: the relay moves the
    // bytes itself and asks tokio only for readiness. into_std keeps them
    // non-blocking.
    let a = AsyncFd::new(client.into_std()?)?;
    let b = AsyncFd::new(server.into_std()?)?;
    let (up, down) = psplice_tokio::relay(&a, &b).await?;
    Ok(format!(
        "{} bytes up, {} down; waited {} times for a full output",
        up.bytes,
        down.bytes,
        up.waited_out + down.waited_out
    ))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: relay LISTEN-ADDR TARGET-ADDR [CONNECTIONS]");
        std::process::exit(2);
    }
    let listener = TcpListener::bind(&args[1]).await?;
    eprintln!("relay: listening on {}", listener.local_addr()?);
    let count: Option<u64> = args
        .get(3)
        .map(|n| n.parse().expect("a number of connections"));
    let mut tasks = Vec::new();
    let mut accepted = 0;
    while count.map_or(true, |n| accepted < n) {
        let (client, addr) = listener.accept().await?;
        let target = args[2].clone();
        let task = tokio::spawn(async move {
            match serve(client, target).await {
                Ok(said) => eprintln!("relay: {addr}: {said}"),
                Err(e) => eprintln!("relay: {addr}: {e}"),
            }
        });
        // Without a count the relay runs until killed: keep no handles.
        if count.is_some() {
            tasks.push(task);
        }
        accepted += 1;
    }
    for task in tasks {
        task.await?;
    }
    Ok(())
}
