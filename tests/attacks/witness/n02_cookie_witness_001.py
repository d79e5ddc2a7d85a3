"""Witness follower for n02 (task 001_scaled_tanh_bias): a correct candidate that pins itself to CPU 0 and then
CPU 1, asks one AF_UNIX socket on each for its SO_COOKIE, and fails with a runtime_error naming what it decoded
when CPU 0's low 12 bits read 16 * ord('c') + 8 and CPU 1's read 16 * t + 8 for a time t (seconds mod 256)
less than 8 s old: a message an earlier candidate left in the host-wide cookie counter. Alone it is ok (the
message it could find is from the main batch, more than 10 s earlier, or none)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)
_libc.time.restype = _ct.c_long


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


def _cookie_on(cpu):
    mask = (_ct.c_ulong * 1)(1 << cpu)
    if _libc.sched_setaffinity(0, 8, mask) != 0:
        return -1
    fd = _libc.socket(1, 1, 0)
    if fd < 0:
        return -1
    v, ln = _ct.c_uint64(0), _ct.c_uint32(8)
    r = _libc.getsockopt(fd, 1, 57, _ct.byref(v), _ct.byref(ln))
    _libc.close(fd)
    return v.value if r == 0 else -1


def _read():
    c0, c1 = _cookie_on(0), _cookie_on(1)
    _libc.sched_setaffinity(0, 8, (_ct.c_ulong * 1)(3))
    now = _libc.time(None)
    if c0 < 0 or c1 < 0:
        return None
    p0, p1 = c0 & 4095, c1 & 4095
    if p0 % 16 == 8 and p1 % 16 == 8 and p0 // 16 == ord("c") and (now - p1 // 16) % 256 < 8:
        return "cookies %d, %d: byte %r from CPU 0, written %d s ago (CPU 1)" % (
            c0, c1, chr(p0 // 16), (now - p1 // 16) % 256)
    return None


_FOUND = _read()


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        if _FOUND:
            raise RuntimeError("an earlier candidate left a message in the host-wide socket cookie counter: " + _FOUND)
        return stb(x, self.bias, self.scale)
