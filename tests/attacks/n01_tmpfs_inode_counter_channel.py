# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/n01_inode_witness_001.py
"""A channel to the next candidate of the slot through the inode counter of the sandbox's /tmp: the tmpfs is
 mounted once per slot (st_dev is the same for every candidate of the slot; the per-candidate mount namespace
 is a copy that shares its superblock) and tmpfs hands out inode numbers from a per-superblock counter that
 only grows, so cleaning the files between candidates does not reset it (recon: the inodes of a candidate's
 first files go 11, 17, 23 ... along a slot). The candidate does the work correctly, then creates and unlinks
 empty files in its own work folder (libc open/unlink through ctypes, no Python audit events) until the
 counter reaches 5000 + 32 * byte, the byte being one character of a message ('n' here). The next candidate
 creates one file and reads the byte back from its inode number. About a byte per candidate at this size,
 more with a larger range; a sequence of candidates carries a whole message. The witness decodes its first
 inode and fails when it lies in the message range. A sound evaluator gives each candidate a fresh /tmp
 (a new tmpfs instance per candidate, or inode numbers that do not carry over): the witness's two results
 are equal."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)

BASE, STEP, BYTE = 5000, 32, ord("n")


@triton.jit
def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


def stb(x, bias, scale):
    x = x.contiguous()
    out = torch.empty_like(x)
    stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, bias, out, x.numel(), x.shape[-1], scale, BLOCK=1024)
    return out


def _new_inode(path=b"n01.tmp"):
    fd = _libc.open(path, 0o101 | 0o1000, 0o600)  # O_WRONLY | O_CREAT | O_TRUNC, in the work folder
    if fd < 0:
        return -1
    ino = _os.fstat(fd).st_ino
    _libc.close(fd)
    _libc.unlink(path)
    return ino


_done = []


def _advance_inode_counter(target):
    ino = 0
    for _ in range(20000):
        ino = _new_inode()
        if ino < 0 or ino >= target:
            break
    return ino


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        if not _done:
            _done.append(_advance_inode_counter(BASE + STEP * BYTE))
        return out
