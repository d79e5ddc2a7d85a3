"""The judge <-> candidate memory file of the CUDA path (`drk.gym.common.shm`), exercised on CPU tensors.

    .venv/bin/python -m pytest tests/test_exchange.py -q
"""
from __future__ import annotations

import os

import pytest
import torch

from drk.gym.common.shm import Exchange, Mapped


def test_inputs_arrive_and_only_expected_outputs_are_written():
    x, y = torch.randn(3, 5), torch.arange(7, dtype=torch.int64)
    ref = torch.zeros(3, 5)
    ex = Exchange().load([x, 2.5, y], [ref])
    m = Mapped(os.dup(ex.fd), ex.header(), keep=frozenset({ex.fd}))
    got = m.input_tensors("cpu")
    assert torch.equal(got[0], x) and torch.equal(got[1], y)
    assert torch.isnan(ex.output(0, "cpu")).all()  # an unwritten slot reads as NaN, never as a stale value
    assert not m.write_output(0, torch.ones(5, 3)) and not m.write_output(1, torch.ones(3, 5))
    assert m.write_output(0, x * 2)
    assert torch.equal(ex.output(0, "cpu"), x * 2)
    ex.close()


def test_one_file_serves_every_forward_and_a_slot_that_moved_is_poisoned_again():
    """Reused so multi-gigabyte tasks pay the kernel's page zeroing once per evaluation, not per forward. A
    slot in the same place as the last forward's holds only what the candidate process wrote there (it can
    write its mapping whenever it likes, so poisoning between its forwards would decide nothing, at a copy of
    every output's size per forward); a slot over bytes that held the judge's inputs is poisoned again."""
    x = torch.randn(6)
    ex = Exchange().load([x], [torch.zeros(6)])
    m = Mapped(os.dup(ex.fd), ex.header(), keep=frozenset({ex.fd}))
    assert m.write_output(0, x + 1) and torch.equal(ex.output(0, "cpu"), x + 1)
    fd = ex.fd
    ex.load([x * 3], [torch.zeros(6)])
    assert ex.fd == fd and torch.equal(ex.output(0, "cpu"), x + 1)  # same file, same slot: the process's bytes
    assert Mapped.open(m, os.dup(ex.fd), ex.header(), keep=frozenset({ex.fd})) is m
    assert torch.equal(m.input_tensors("cpu")[0], x * 3)
    ex.load([torch.randn(100)], [torch.zeros(6)])  # a longer input: the slot moved past it
    assert ex.fd == fd and torch.isnan(ex.output(0, "cpu")).all()
    assert m.write_output(0, x + 2)
    ex.load([x], [torch.zeros(6)])  # back where the longer input's bytes (the judge's) lie
    assert ex.fd == fd and torch.isnan(ex.output(0, "cpu")).all()
    assert m.write_output(0, x + 1)
    ex.fresh()  # the next candidate: every byte poisoned, and the next load's slots too
    ex.load([x], [torch.zeros(6)])
    assert torch.isnan(ex.output(0, "cpu")).all()
    ex.load([torch.randn(1 << 16)], [torch.zeros(1 << 16)])  # larger: a new file, and a new mapping of it
    m2 = Mapped.open(m, os.dup(ex.fd), ex.header(), keep=frozenset({ex.fd}))
    assert m2 is not m and m2.input_tensors("cpu")[0].numel() == 1 << 16
    m2.close()
    ex.close()


def test_the_candidate_cannot_resize_the_file_under_the_judge():
    ex = Exchange().load([torch.randn(4)], [torch.zeros(4)])
    fd = os.dup(ex.fd)
    for size in (0, ex.size * 4):
        with pytest.raises(PermissionError):
            os.ftruncate(fd, size)
    os.close(fd)
    assert ex.output(0, "cpu").shape == (4,)
    ex.close()


@pytest.mark.gpu
def test_on_cuda_both_sides_pin_the_file_and_an_unwritten_slot_still_reads_nan():
    """Pinned (page-locked) so the copy engines move gigabytes at full speed; the poison fill and the
    round trip keep their meaning there."""
    x, ref = torch.randn(1 << 20, device="cuda"), torch.zeros(3, 1 << 18, device="cuda")
    ex = Exchange().load([x], [ref, ref])
    m = Mapped(os.dup(ex.fd), ex.header(), pin=True, keep=frozenset({ex.fd}))
    assert ex.pinned and m.pinned
    assert torch.equal(m.input_tensors("cuda")[0], x)
    assert m.write_output(0, ref + 1)
    assert torch.equal(ex.output(0, "cuda"), ref + 1) and torch.isnan(ex.output(1, "cuda")).all()
    m.close()
    ex.close()
    assert not ex.pinned and not m.pinned


def test_a_host_that_cannot_hold_the_file_is_an_evaluator_error_not_a_crash(monkeypatch):
    """Pages of a memory file are allocated when first touched; on a host out of memory that touch is a
    SIGBUS that kills the judge mid-evaluation. Allocated up front instead, a shortage is an error the
    judge reports as its own (infra_error), and no descriptor is left behind."""
    from drk.gym.common import shm

    def no_memory(fd, offset, length):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(shm.os, "posix_fallocate", no_memory)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(shm.HostMemoryError, match="GB"):
        Exchange().load([torch.randn(1000)], [torch.zeros(1000)])
    assert len(os.listdir("/proc/self/fd")) == before


def test_between_candidates_every_byte_of_the_file_is_poisoned():
    """The judge keeps one file for every candidate it evaluates. A candidate process can write anywhere in
    its mapping (it is its own memory: padding between slots, an unused tail), so whatever it left there
    must be gone before the next candidate maps the same file, or two candidates could pass answers."""
    ex = Exchange().load([torch.randn(5)], [torch.zeros(3)])  # 20 and 12 bytes: padded to 256 each
    m = Mapped(os.dup(ex.fd), ex.header(), keep=frozenset({ex.fd}))
    m.mm[:] = b"\x07" * len(m.mm)  # the first candidate writes everywhere
    ex.fresh()
    assert m.mm[:] == b"\xff" * len(m.mm)
    fd = ex.fd
    ex.load([torch.ones(5)], [torch.zeros(3)])  # bytes 00 00 80 3f: random inputs hold a 0x07 byte now and then
    assert ex.fd == fd and b"\x07" not in bytes(m.mm[:])  # same file for the next candidate, nothing left
    m.close()
    ex.close()


def test_the_file_is_whole_pages_so_no_mapped_byte_lies_past_what_is_poisoned():
    """A mapping covers whole pages: the bytes of the file's last page past its end are mapped in every process
    that maps it, kept in that page, and beyond any poisoning of the file (attack m01 left a message there).
    So the file is always a whole number of pages."""
    import ctypes
    import mmap

    for need in (1, 256, 4097, 450_433):
        ex = Exchange()
        ex.reserve(need)
        assert ex.size >= need and ex.size % mmap.PAGESIZE == 0
        m = Mapped(os.dup(ex.fd), {"inputs_shm": [], "outputs_shm": [], "shm_size": ex.size},
                   keep=frozenset({ex.fd}))
        addr = ctypes.addressof(ctypes.c_char.from_buffer(m.mm))
        ctypes.memset(addr + ex.size - 16, 7, 16)  # the last bytes any candidate can reach
        ex.fresh()
        assert ctypes.string_at(addr + ex.size - 16, 16) == b"\xff" * 16
        m.close()
        ex.close()


def test_the_candidate_side_keeps_no_descriptor_of_the_file():
    """The exchange file lives on the kernel's shared-memory mount, where no noexec reaches: a descriptor of
    it would let candidate code map what it wrote there executable (attacks k03, k17). The mapping side
    closes the one it was sent and neutralises every other (mmap's own duplicate, a racing dup); only the
    judge's own, which a test holds in the same process, is kept. Its mode keeps other uids from reopening it."""
    ex = Exchange().load([torch.randn(8)], [torch.zeros(8)])
    assert os.fstat(ex.fd).st_mode & 0o777 == 0o600
    stray = os.dup(ex.fd)  # as if a candidate thread had duplicated the descriptor in flight
    m = Mapped(os.dup(ex.fd), ex.header(), keep=frozenset({ex.fd}))
    file = (os.fstat(ex.fd).st_dev, os.fstat(ex.fd).st_ino)
    left = []
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.fstat(int(name))
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == file:
            left.append(int(name))
    assert left == [ex.fd], left
    assert m.write_output(0, torch.ones(8)) and torch.equal(ex.output(0, "cpu"), torch.ones(8))
    os.close(stray)
    m.close()
    ex.close()


def test_without_a_descriptor_a_forward_reuses_the_mapping_it_was_sent_before():
    """The judge sends the file once, with the candidate's load, and forwards after that carry none."""
    ex = Exchange()
    ex.reserve(Exchange.layout_bytes([torch.randn(8)], [torch.zeros(8)]))
    serial = ex.serial
    m = Mapped.open(None, os.dup(ex.fd), {"inputs_shm": [], "outputs_shm": [], "shm_size": ex.size},
                    keep=frozenset({ex.fd}))
    x = torch.randn(8)
    ex.load([x], [torch.zeros(8)])
    assert ex.serial == serial  # the reserved file fits: no new file, so nothing to send
    assert Mapped.open(m, None, ex.header()) is m and torch.equal(m.input_tensors("cpu")[0], x)
    with pytest.raises(ValueError):
        Mapped.open(None, None, ex.header())
    m.close()
    ex.close()
