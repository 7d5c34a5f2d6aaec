//! Range sync and its levels; write-behind.

mod common;

use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsFd;

use common::*;
use psplice::{sync, Level, SyncFlags, WriteBehind};

/// Whether the scratch directory lives in memory alone, where every sync
/// reaches Level::None (psplice_sync(3)).
fn in_memory() -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let dir = env!("CARGO_TARGET_TMPDIR");
    let mut best = ("", "");
    for line in mounts.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() > 2 && dir.starts_with(f[1]) && f[1].len() >= best.0.len() {
            best = (f[1], f[2]);
        }
    }
    matches!(best.1, "tmpfs" | "ramfs")
}

#[test]
fn each_request_reaches_its_level() {
    let (_, mut f) = empty_file("sync");
    f.write_all(&data(1 << 20)).unwrap();
    let want = |level| if in_memory() { Level::None } else { level };
    let range = SyncFlags::WAIT_BEFORE | SyncFlags::WRITE | SyncFlags::WAIT_AFTER;
    assert_eq!(sync(f.as_fd(), 0, 0, range).unwrap(), want(Level::Written));
    assert_eq!(
        sync(f.as_fd(), 0, 4096, SyncFlags::DATA).unwrap(),
        want(Level::DataDurable)
    );
    assert_eq!(
        sync(f.as_fd(), 0, 0, SyncFlags::METADATA).unwrap(),
        want(Level::FileDurable)
    );
    assert_eq!(
        sync(f.as_fd(), 0, 0, SyncFlags::default()).unwrap(),
        Level::None
    );
    assert!(Level::Submitted < Level::Written && Level::DataDurable < Level::FileDurable);
    assert_eq!(Level::DataDurable.name(), "data-durable");
}

#[test]
fn bad_requests_fail_with_their_errno() {
    let (_, f) = empty_file("sync");
    let e = sync(f.as_fd(), 0, 0, SyncFlags::from_bits_retain(1 << 20)).unwrap_err();
    assert_eq!(
        (e.error.kind(), e.achieved),
        (io::ErrorKind::InvalidInput, Level::None)
    );
    let e = sync(f.as_fd(), u64::MAX, 0, SyncFlags::WRITE).unwrap_err();
    assert_eq!(e.error.kind(), io::ErrorKind::InvalidInput);
    let (_r, w) = common::pipe().unwrap();
    let e = sync(w.as_fd(), 0, 0, SyncFlags::DATA).unwrap_err();
    assert_eq!(e.error.raw_os_error(), Some(29 /* ESPIPE */));
    let as_io: io::Error = e.into();
    assert_eq!(as_io.raw_os_error(), Some(29));
}

#[test]
fn write_behind_keeps_up_and_finishes_durable() {
    let (path, f) = empty_file("wb");
    let chunk = 1 << 20;
    let mut wb = WriteBehind::new(f.as_fd(), chunk, false).unwrap();
    let block = data(256 << 10);
    let mut off = 0u64;
    for _ in 0..20 {
        f.write_all_at(&block, off).unwrap();
        wb.wrote(off, block.len()).unwrap();
        off += block.len() as u64;
    }
    let level = wb.finish(SyncFlags::DATA).unwrap();
    assert_eq!(
        level,
        if in_memory() {
            Level::None
        } else {
            Level::DataDurable
        }
    );
    assert_eq!(std::fs::metadata(path).unwrap().len(), off);
}

#[test]
fn write_behind_without_sync_says_the_weakest_chunk() {
    let (_, f) = empty_file("wb");
    let mut wb = WriteBehind::new(f.as_fd(), 1 << 20, true).unwrap();
    let block = data(1 << 20);
    for i in 0..4u64 {
        f.write_all_at(&block, i << 20).unwrap();
        wb.wrote(i << 20, block.len()).unwrap();
    }
    let level = wb.finish(SyncFlags::default()).unwrap();
    assert!(level <= Level::Written, "{level}");
}

#[test]
fn write_behind_refuses_a_pipe() {
    let (_r, w) = common::pipe().unwrap();
    let e = WriteBehind::new(w.as_fd(), 0, false).err().unwrap();
    assert_eq!(e.raw_os_error(), Some(29 /* ESPIPE */));
}

#[test]
fn write_behind_dropped_unfinished_frees_itself() {
    let (_, f) = empty_file("wb");
    let mut wb = WriteBehind::new(f.as_fd(), 0, false).unwrap();
    f.write_all_at(b"abc", 0).unwrap();
    wb.wrote(0, 3).unwrap();
    drop(wb);
}
