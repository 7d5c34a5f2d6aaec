"""sync() and its levels, WriteBehind."""

import errno
import os

import pytest

import psplice
from conftest import fs_type

IN_MEMORY = ("tmpfs", "ramfs")


def test_sync_data_is_data_durable_on_a_disk(tmp_path):
    path = tmp_path / "f"
    with open(path, "wb") as f:
        f.write(b"x" * 100000)
        f.flush()
        level = psplice.sync(f, flags=psplice.SYNC_DATA)
        assert isinstance(level, psplice.Level)
        if fs_type(tmp_path) in IN_MEMORY:
            assert level == psplice.Level.NONE
        else:
            assert level == psplice.Level.DATA_DURABLE
            assert str(level) == "data-durable"
            assert psplice.sync(f, flags=psplice.SYNC_METADATA) == psplice.Level.FILE_DURABLE


def test_sync_range_levels_are_ordered(tmp_path):
    with open(tmp_path / "f", "wb") as f:
        f.write(b"y" * 100000)
        f.flush()
        start = psplice.sync(f, 0, 4096, psplice.SYNC_WRITE)
        waited = psplice.sync(f, 0, 0, psplice.SYNC_WAIT_BEFORE | psplice.SYNC_WRITE |
                              psplice.SYNC_WAIT_AFTER)
        assert start <= waited <= psplice.Level.DATA_DURABLE
        if fs_type(tmp_path) not in IN_MEMORY:
            assert start in (psplice.Level.SUBMITTED, psplice.Level.NONE)
            assert waited in (psplice.Level.WRITTEN, psplice.Level.DATA_DURABLE)
        assert psplice.sync(f, flags=0) == psplice.Level.NONE


def test_sync_errors_carry_the_level():
    r, w = os.pipe()
    try:
        with pytest.raises(psplice.Error) as ei:
            psplice.sync(w)
        assert ei.value.errno == errno.ESPIPE
        assert ei.value.level == psplice.Level.NONE
    finally:
        os.close(r)
        os.close(w)
    with pytest.raises(psplice.Error) as ei:
        psplice.sync(r)
    assert ei.value.errno == errno.EBADF


def test_sync_refuses_an_unknown_flag(tmp_path):
    with open(tmp_path / "f", "wb") as f:
        with pytest.raises(psplice.Error) as ei:
            psplice.sync(f, flags=1 << 20)
        assert ei.value.errno == errno.EINVAL


def test_write_behind_writes_the_file_and_syncs(tmp_path, payload):
    path = tmp_path / "out"
    chunk = 64 << 10
    with open(path, "wb", buffering=0) as f:
        with psplice.WriteBehind(f, chunk, sync=psplice.SYNC_DATA) as wb:
            for i in range(0, len(payload), 10000):
                assert wb.write(payload[i:i + 10000]) == len(payload[i:i + 10000])
        assert wb.finished
        with pytest.raises(ValueError):
            wb.wrote(0, 1)
    assert path.read_bytes() == payload


def test_write_behind_after_copies_with_offsets(tmp_path, payload):
    src = tmp_path / "src"
    src.write_bytes(payload)
    with open(src, "rb") as fi, open(tmp_path / "dst", "wb") as fo:
        wb = psplice.WriteBehind(fo, 1 << 20)
        off = 0
        for _ in range(len(payload) // (1 << 20) + 2):
            r = psplice.copy(fi, fo, 1 << 20, offset_in=off, offset_out=off)
            if not r.out_bytes:
                break
            wb.wrote(off, r.out_bytes)
            off = r.offset_out
        else:
            raise AssertionError("the offsets did not advance to the end")
        level = wb.finish(psplice.SYNC_DATA)
        if fs_type(tmp_path) not in IN_MEMORY:
            assert level == psplice.Level.DATA_DURABLE
    assert (tmp_path / "dst").read_bytes() == payload


def test_write_behind_on_an_append_file_tells_where_bytes_landed(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"z" * 5000)
    with open(path, "ab", buffering=0) as f:
        with psplice.WriteBehind(f, 4096) as wb:
            assert wb.write(b"a" * 10000) == 10000
    assert path.read_bytes() == b"z" * 5000 + b"a" * 10000


def test_write_behind_refuses_a_pipe():
    r, w = os.pipe()
    try:
        with pytest.raises(psplice.Error) as ei:
            psplice.WriteBehind(w)
        assert ei.value.errno == errno.ESPIPE
    finally:
        os.close(r)
        os.close(w)


def test_write_behind_refuses_a_negative_offset(tmp_path):
    with open(tmp_path / "f", "wb") as f, psplice.WriteBehind(f) as wb:
        with pytest.raises(psplice.Error) as ei:
            wb.wrote(-1, 10)
        assert ei.value.errno == errno.EINVAL
        # The first error is reported again, by every later call.
        with pytest.raises(psplice.Error) as ei:
            wb.wrote(0, 10)
        assert ei.value.errno == errno.EINVAL
        with pytest.raises(psplice.Error):
            wb.finish()
