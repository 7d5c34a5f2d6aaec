//! The crate's copy of a large cached file into a pipe, against
//! `std::io::copy` and against the C library's own psplice_copy(), in the
//! same run. A reader process drains the pipe into /dev/null by splice, the same for
//! all three; each round runs the crate and C back to back three times,
//! each pair in the opposite order from the last, then std::io::copy; the
//! best and the median of the runs are reported. The crate against C is
//! the median of the pairs' own time ratios (wall, and the copying
//! thread's CPU), with the least and the most: on a busy machine one run's
//! time can be twice the next one's, and a ratio of medians taken apart
//! moves with it.
//!
//!     cargo run --release --example bench -- [MiB] [dir] [--pipe-size BYTES]
//!
//! MiB: the file's size (1024); dir: where it is made (the temporary
//! directory); --pipe-size: grow each pipe with F_SETPIPE_SZ first
//! (otherwise it has the kernel's default, as a program's pipes do).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::raw::c_int;
use std::os::unix::io::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use psplice::{sys, Flags, TO_EOF};

const ROUNDS: usize = 9;
/// Runs of the crate and of C in each round, back to back.
const PAIRS: usize = 3;

/// One way of copying the file into the pipe.
type Way = fn(&mut File, &mut ChildStdin) -> io::Result<()>;
const F_SETPIPE_SZ: c_int = 1031;

const CLOCK_THREAD_CPUTIME_ID: c_int = 3;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
    fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
}

/// The CPU time this thread has used: what a copy costs the copier,
/// whatever else the machine runs meanwhile.
fn thread_cpu() -> Duration {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: ts is a live timespec; the clock exists on Linux.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.sec as u64, ts.nsec as u32)
}

/// The reader process: the pipe spliced into /dev/null to the end, then
/// how many bytes. The same for the three ways; a reader that copied what
/// it read (read(2)) would cost more than the fastest writer and bound
/// them all at its own speed, hiding the writer's cost the bench compares.
fn drain() -> io::Result<()> {
    let null = File::options().write(true).open("/dev/null")?;
    let stdin = io::stdin();
    let moved = psplice::copy(stdin.as_fd(), None, null.as_fd(), None, TO_EOF, Flags::NONE)
        .map_err(io::Error::from)?;
    println!("{}", moved.out_bytes);
    Ok(())
}

fn reader(pipe_size: Option<c_int>) -> io::Result<(Child, ChildStdin)> {
    let mut child = Command::new(std::env::current_exe()?)
        .env("PSPLICE_BENCH_DRAIN", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdin = child.stdin.take().expect("a pipe");
    if let Some(size) = pipe_size {
        // SAFETY: F_SETPIPE_SZ on a pipe we own, with an int argument.
        if unsafe { fcntl(stdin.as_raw_fd(), F_SETPIPE_SZ, size) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((child, stdin))
}

/// Times one copy of the file into a fresh reader, to the reader's end;
/// also the CPU time the copy took this thread.
fn run(
    file: &mut File,
    size: u64,
    pipe_size: Option<c_int>,
    copy: Way,
) -> io::Result<(Duration, Duration)> {
    file.seek(SeekFrom::Start(0))?;
    let (mut child, mut pipe) = reader(pipe_size)?;
    let start = Instant::now();
    let cpu = thread_cpu();
    copy(file, &mut pipe)?;
    let cpu = thread_cpu() - cpu;
    drop(pipe);
    let mut said = String::new();
    child
        .stdout
        .take()
        .expect("a pipe")
        .read_to_string(&mut said)?;
    child.wait()?;
    let took = start.elapsed();
    assert_eq!(
        said.trim().parse::<u64>().ok(),
        Some(size),
        "the reader got a different count"
    );
    Ok((took, cpu))
}

fn crate_copy(file: &mut File, pipe: &mut ChildStdin) -> io::Result<()> {
    psplice::copy(file.as_fd(), None, pipe.as_fd(), None, TO_EOF, Flags::NONE)?;
    Ok(())
}

fn c_copy(file: &mut File, pipe: &mut ChildStdin) -> io::Result<()> {
    // SAFETY: both fds are open; NULL offsets and result are allowed.
    let rc = unsafe {
        sys::psplice_copy(
            file.as_raw_fd(),
            std::ptr::null_mut(),
            pipe.as_raw_fd(),
            std::ptr::null_mut(),
            TO_EOF,
            0,
            std::ptr::null_mut(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn std_copy(file: &mut File, pipe: &mut ChildStdin) -> io::Result<()> {
    io::copy(file, pipe)?;
    Ok(())
}

/// Makes the file (if it is not already that size) and reads it once so
/// that it is in the page cache.
fn cached_file(dir: PathBuf, size: u64) -> io::Result<(PathBuf, File)> {
    let path = dir.join(format!("psplice-rust-bench-{size}"));
    if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(size) {
        let mut f = File::create(&path)?;
        let block: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
        for _ in 0..size >> 20 {
            f.write_all(&block)?;
        }
    }
    let mut f = File::open(&path)?;
    io::copy(&mut f, &mut io::sink())?;
    Ok((path, f))
}

/// The crate's time over C's in each pair of runs, sorted; `pick` chooses wall
/// or CPU time.
fn ratios(
    times: &[Vec<(Duration, Duration)>],
    pick: fn(&(Duration, Duration)) -> Duration,
) -> Vec<f64> {
    let mut r: Vec<f64> = times[0]
        .iter()
        .zip(&times[1])
        .map(|(ours, c)| pick(ours).as_secs_f64() / pick(c).as_secs_f64())
        .collect();
    r.sort_by(f64::total_cmp);
    r
}

/// The median of sorted ratios, with the least and the most.
fn spread(sorted: &[f64]) -> String {
    format!(
        "median {:.3}x (min {:.3}, max {:.3})",
        sorted[sorted.len() / 2],
        sorted[0],
        sorted[sorted.len() - 1]
    )
}

fn gib_s(size: u64, d: Duration) -> f64 {
    size as f64 / d.as_secs_f64() / (1u64 << 30) as f64
}

fn main() -> io::Result<()> {
    if std::env::var_os("PSPLICE_BENCH_DRAIN").is_some() {
        return drain();
    }
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut pipe_size = None;
    if let Some(i) = args.iter().position(|a| a == "--pipe-size") {
        pipe_size = Some(
            args.get(i + 1)
                .and_then(|s| s.parse().ok())
                .expect("--pipe-size BYTES"),
        );
        args.drain(i..i + 2);
    }
    let mib: u64 = args
        .first()
        .map_or(1024, |s| s.parse().expect("a size in MiB"));
    let dir = args.get(1).map_or_else(std::env::temp_dir, PathBuf::from);
    let size = mib << 20;
    let (path, mut file) = cached_file(dir, size)?;
    let ways: [(&str, Way); 3] = [
        ("psplice crate", crate_copy),
        ("C psplice_copy", c_copy),
        ("std::io::copy", std_copy),
    ];
    let mut times = vec![Vec::new(); ways.len()];
    // Round 0 warms up and is not counted.
    for round in 0..=ROUNDS {
        let mut order = Vec::new();
        for pair in 0..PAIRS {
            order.extend(if (round * PAIRS + pair) % 2 == 1 {
                [1, 0]
            } else {
                [0, 1]
            });
        }
        order.push(2);
        for i in order {
            let took = run(&mut file, size, pipe_size, ways[i].1)?;
            if round > 0 {
                times[i].push(took);
            }
        }
    }
    let wall_ratios = ratios(&times, |t| t.0);
    let cpu_ratios = ratios(&times, |t| t.1);
    let mut times: Vec<Vec<Duration>> = times
        .iter()
        .map(|way| way.iter().map(|t| t.0).collect())
        .collect();
    println!(
        "{} MiB cached file ({}) into a pipe ({}), drained by a reader process; {ROUNDS} rounds",
        mib,
        path.display(),
        pipe_size.map_or("default size".into(), |s| format!("{s} bytes"))
    );
    println!("  {:<16} {:>12} {:>14}", "", "best", "median");
    let mut best = Vec::new();
    let mut median = Vec::new();
    for (i, (name, _)) in ways.iter().enumerate() {
        times[i].sort();
        best.push(times[i][0].as_secs_f64());
        median.push(times[i][times[i].len() / 2].as_secs_f64());
        println!(
            "  {name:<16} {:>7.2} GiB/s {:>8.2} GiB/s",
            gib_s(size, times[i][0]),
            gib_s(size, times[i][times[i].len() / 2])
        );
    }
    println!(
        "  time, crate / C, per pair: {} (goal <= 1.05)",
        spread(&wall_ratios)
    );
    println!("  CPU, crate / C, per pair:  {}", spread(&cpu_ratios));
    println!(
        "  speed, crate / std::io::copy: best {:.2}x  median {:.2}x",
        best[2] / best[0],
        median[2] / median[0]
    );
    Ok(())
}
