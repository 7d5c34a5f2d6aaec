//! The C interface of libpsplice as include/psplice.h declares it, by hand:
//! the types have the C layout and the functions the C signatures. Safe code
//! uses the wrappers of the crate's root; these are for callers that need
//! exactly the C call (a benchmark of the wrappers, for example).

#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

pub const PSPLICE_F_MOVE: c_uint = 0x01;
pub const PSPLICE_F_NONBLOCK: c_uint = 0x02;
pub const PSPLICE_F_MORE: c_uint = 0x04;
pub const PSPLICE_F_NOFALLBACK: c_uint = 0x100;
pub const PSPLICE_F_REFLINK: c_uint = 0x200;
pub const PSPLICE_F_SIGPIPE_IGNORED: c_uint = 0x400;
pub const PSPLICE_F_EINTR: c_uint = 0x800;
pub const PSPLICE_F_ONLY_MASK: c_uint = 0xf000;
pub const PSPLICE_TO_EOF: u64 = u64::MAX;
pub const PSPLICE_TEE_MAX: usize = 1024;

/// PSPLICE_F_ONLY(method).
pub const fn psplice_f_only(method: c_int) -> c_uint {
    ((method as c_uint) & 0xf) << 12
}

pub const PSPLICE_SIDE_NONE: c_int = 0;
pub const PSPLICE_SIDE_IN: c_int = 1;
pub const PSPLICE_SIDE_OUT: c_int = 2;

pub const PSPLICE_SYNC_WAIT_BEFORE: c_uint = 1;
pub const PSPLICE_SYNC_WRITE: c_uint = 2;
pub const PSPLICE_SYNC_WAIT_AFTER: c_uint = 4;
pub const PSPLICE_SYNC_DATA: c_uint = 8;
pub const PSPLICE_SYNC_METADATA: c_uint = 16;

pub const PSPLICE_WB_KEEP_CACHE: c_uint = 1;

/// struct psplice_result.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct psplice_result {
    pub in_bytes: u64,
    pub out_bytes: u64,
    pub error: c_int,
    pub side: c_int,
    pub method: c_int,
    pub parked: *const c_void,
    pub parked_len: usize,
}

impl Default for psplice_result {
    fn default() -> Self {
        psplice_result {
            in_bytes: 0,
            out_bytes: 0,
            error: 0,
            side: 0,
            method: 0,
            parked: std::ptr::null(),
            parked_len: 0,
        }
    }
}

/// Opaque: struct psplice_pair.
#[repr(C)]
pub struct psplice_pair {
    _opaque: [u8; 0],
}

/// Opaque: struct psplice_tee.
#[repr(C)]
pub struct psplice_tee {
    _opaque: [u8; 0],
}

/// Opaque: struct psplice_wb.
#[repr(C)]
pub struct psplice_wb {
    _opaque: [u8; 0],
}

// enum psplice_sync_level is an int-sized C enum: it is passed as c_int.
// One line per function, as the header has them.
#[rustfmt::skip]
extern "C" {
    pub fn psplice(fd_in: c_int, off_in: *mut i64, fd_out: c_int, off_out: *mut i64,
                   len: usize, flags: c_uint) -> isize;
    pub fn psplice_ex(fd_in: c_int, off_in: *mut i64, fd_out: c_int, off_out: *mut i64,
                      len: usize, flags: c_uint, res: *mut psplice_result) -> isize;
    pub fn psplice_copy(fd_in: c_int, off_in: *mut i64, fd_out: c_int, off_out: *mut i64,
                        len: u64, flags: c_uint, res: *mut psplice_result) -> c_int;

    pub fn psplice_pair_new(fd_in: c_int, fd_out: c_int, flags: c_uint) -> *mut psplice_pair;
    pub fn psplice_pair_move(p: *mut psplice_pair, off_in: *mut i64, off_out: *mut i64,
                             len: usize, flags: c_uint, res: *mut psplice_result) -> isize;
    pub fn psplice_pair_copy(p: *mut psplice_pair, off_in: *mut i64, off_out: *mut i64,
                             len: u64, flags: c_uint, res: *mut psplice_result) -> c_int;
    pub fn psplice_pair_pending(p: *mut psplice_pair) -> usize;
    pub fn psplice_pair_take(p: *mut psplice_pair, buf: *mut c_void, len: usize) -> usize;
    pub fn psplice_pair_free(p: *mut psplice_pair);

    pub fn psplice_tee_new(fd_in: c_int, fds_out: *const c_int, n: usize, hold_max: usize,
                           flags: c_uint) -> *mut psplice_tee;
    pub fn psplice_tee_move(t: *mut psplice_tee, len: usize, flags: c_uint,
                            res: *mut psplice_result) -> isize;
    pub fn psplice_tee_copy(t: *mut psplice_tee, len: u64, flags: c_uint,
                            res: *mut psplice_result) -> c_int;
    pub fn psplice_tee_pending(t: *mut psplice_tee, i: usize) -> usize;
    pub fn psplice_tee_take(t: *mut psplice_tee, i: usize, buf: *mut c_void, len: usize) -> usize;
    pub fn psplice_tee_free(t: *mut psplice_tee);
    pub fn psplice_tee(fd_in: c_int, fds_out: *const c_int, n: usize, len: u64, flags: c_uint,
                       res: *mut psplice_result) -> c_int;

    pub fn psplice_last() -> *const psplice_result;
    pub fn psplice_method_name(method: c_int) -> *const c_char;
    pub fn psplice_side_name(side: c_int) -> *const c_char;
    pub fn psplice_version() -> *const c_char;

    pub fn psplice_sync(fd: c_int, offset: i64, nbytes: i64, flags: c_uint,
                        achieved: *mut c_int) -> c_int;
    pub fn psplice_sync_level_name(level: c_int) -> *const c_char;

    pub fn psplice_wb_new(fd: c_int, chunk: usize, flags: c_uint) -> *mut psplice_wb;
    pub fn psplice_wb_wrote(wb: *mut psplice_wb, offset: i64, len: usize) -> c_int;
    pub fn psplice_wb_finish(wb: *mut psplice_wb, sync_flags: c_uint, achieved: *mut c_int) -> c_int;
}
