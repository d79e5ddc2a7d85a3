"""Witness follower for n01 (task 001_scaled_tanh_bias): a correct candidate that creates one file in its work
folder and fails with a runtime_error naming the byte it decoded when the file's inode number lies in n01's
message range (5000 + 32 * byte .. + 31): an earlier candidate of the slot moved /tmp's inode counter there.
Alone (the first candidate of a fresh pool) its inode is a small number and it is ok."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)


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


def _first_inode():
    fd = _libc.open(b"witness.tmp", 0o101 | 0o1000, 0o600)
    if fd < 0:
        return -1
    ino = _os.fstat(fd).st_ino
    _libc.close(fd)
    _libc.unlink(b"witness.tmp")
    return ino


_INO = _first_inode()


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        if 5000 <= _INO < 5000 + 32 * 256:
            raise RuntimeError("first inode %d in /tmp: an earlier candidate of the slot left the byte %r in the "
                               "tmpfs inode counter" % (_INO, chr((_INO - 5000) // 32)))
        return stb(x, self.bias, self.scale)
