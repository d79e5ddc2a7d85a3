# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_process_survives expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/k09_process_witness_001.py
"""Leaves a process that is not its descendant: a raw clone(2) with CLONE_PARENT (libc syscall 56 through
 ctypes reached as torch.ctypes) makes the new process a child of the candidate's PARENT (the fork server), a
 sibling of the candidate, so a sweep that kills the candidate's process tree (its children, its process group)
 never reaches it; it also calls setsid. The sibling sleeps 25 s with libc sleep and exits (bounded). The
 candidate does the work correctly; the witness (the next candidate of the slot) lists /proc and fails when a
 process of another unprivileged uid is still alive beside it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)
CLONE_PARENT, SIGCHLD = 0x00008000, 17


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


_spawned = []


def _sibling():
    if _spawned:
        return
    _libc.syscall.restype = _ct.c_long
    pid = _libc.syscall(56, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
    if pid == 0:  # the sibling: no Python from here on
        _libc.setsid()
        _libc.sleep(25)
        _libc._exit(0)
    _spawned.append(pid)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        _sibling()
        return stb(x, self.bias, self.scale)
