# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/n06_mlock_witness_001.py
"""A noise-free 16-bit register shared by every process on the host: `unevictable_pgs_mlocked` in /proc/vmstat
 counts pages ever mlocked, host-wide, and only mlock moves it (recon: a candidate that mlocked 1 MiB moved it
 by exactly 256 and the next candidate of the slot read back exactly that value; 4 in several minutes from
 the rest of the host). mlock is allowed (RLIMIT_MEMLOCK 8 MiB) and munlock lets the same pages count again,
 so a candidate sets the counter to any value mod 65536 with a few cycles of mlock/munlock over an 8 MiB
 anonymous buffer (libc through ctypes). The candidate does the work correctly, then sets the counter to
 256 * (time mod 256) + ord('v') mod 65536: a byte of message and a timestamp (so the witness can tell a fresh
 message from an old one). The next candidate (any slot, any pool) reads /proc/vmstat through libc and
 decodes it. Sixteen bits per candidate here, any number of bits over a sequence. The witness fails when the
 value carries the byte with a time at most 8 s old. A sound evaluator hides the host-wide counters of /proc
 (vmstat, stat, ...) from candidates, or refuses mlock: the witness's two results are equal."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)
_libc.mmap.restype = _ct.c_void_p
_libc.mmap.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int, _ct.c_int, _ct.c_int, _ct.c_long]
_libc.mlock.argtypes = _libc.munlock.argtypes = [_ct.c_void_p, _ct.c_size_t]
_libc.time.restype = _ct.c_long

M, BYTE, PAGES = 65536, ord("v"), 2048


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


def _mlocked():
    fd = _libc.open(b"/proc/vm" + b"stat", 0)
    if fd < 0:
        return -1
    buf, data = _ct.create_string_buffer(65536), b""
    while True:
        n = _libc.read(fd, buf, 65536)
        if n <= 0:
            break
        data += buf.raw[:n]
    _libc.close(fd)
    for ln in data.split(b"\n"):
        if ln.startswith(b"unevictable_pgs_mlocked"):
            return int(ln.split()[1])
    return -1


_done = []


def _set_register():
    v = _mlocked()
    if v < 0:
        return
    target = (256 * (_libc.time(None) % 256) + BYTE) % M
    need = (target - v) % M
    p = _libc.mmap(None, PAGES * 4096, 3, 0x22, -1, 0)  # PROT_READ|WRITE, MAP_PRIVATE|ANONYMOUS
    while need > 0:
        k = min(need, PAGES)
        if _libc.mlock(p, k * 4096) != 0:
            break
        _libc.munlock(p, k * 4096)
        need -= k
    _done.append((v, target, _mlocked()))


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        if not _done:
            _set_register()
        return out
