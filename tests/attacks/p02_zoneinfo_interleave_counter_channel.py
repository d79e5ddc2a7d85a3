# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/p02_interleave_witness_001.py
"""n06's noise-free host-wide register, moved from the frozen files to a live one: the NUMA counters that
 /sys/devices/system/node/node0/numastat shows (now a frozen copy) are also printed, per zone, by
 /proc/zoneinfo, which is still the kernel's live file. `numa_interleave` counts pages allocated under an
 MPOL_INTERLEAVE memory policy, and nothing on the host uses one (recon: 1088 since boot, unchanged for
 minutes). set_mempolicy is allowed, so the candidate does the work correctly, then switches its thread to
 MPOL_INTERLEAVE over node 0, faults pages of a 16 MiB anonymous buffer in (memset) and drops them
 (MADV_DONTNEED) until the sum of the zones' numa_interleave mod 65536 lies in [64 * code + 8, 64 * code + 48)
 with code = 16 * (time mod 64) + 10 (the low nibble of 'z'; the interpreter's own allocations add ~0.4 %
 noise, hence the window), and switches back to the default policy (libc through ctypes). The next candidate
 (any slot, any pool) reads /proc/zoneinfo through libc and decodes the nibble and its age (recon: the
 counter moved only by candidates; 10 bits per candidate here, 16 with finer steps). A sound
 evaluator freezes or hides zoneinfo like numastat (and buddyinfo/pagetypeinfo), or refuses set_mempolicy/mbind:
 the witness's two results are equal."""
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


def _read(path):
    fd = _libc.open(path, 0)
    if fd < 0:
        return b""
    buf, data = _ct.create_string_buffer(65536), b""
    while True:
        n = _libc.read(fd, buf, 65536)
        if n <= 0:
            break
        data += buf.raw[:n]
    _libc.close(fd)
    return data
_libc.syscall.restype = _ct.c_long
_libc.mmap.restype = _ct.c_void_p
_libc.mmap.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int, _ct.c_int, _ct.c_int, _ct.c_long]
_libc.madvise.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int]
_libc.memset.argtypes = [_ct.c_void_p, _ct.c_int, _ct.c_size_t]

M, NIBBLE, PAGES = 65536, ord("z") & 15, 4096
SET_MEMPOLICY, MPOL_DEFAULT, MPOL_INTERLEAVE, MADV_DONTNEED = 238, 0, 3, 4


def _interleave():
    t = _read(b"/proc/zone" + b"info")
    vals = [int(ln.split()[1]) for ln in t.split(b"\n") if ln.strip().startswith(b"numa_interleave")]
    return sum(vals) if vals else -1


_done = []


def _set_register():
    v = _interleave()
    if v < 0:
        _done.append("no zoneinfo")
        return
    code = 16 * (_libc.time(None) % 64) + NIBBLE
    lo = 64 * code + 8
    p = _libc.mmap(None, PAGES * 4096, 3, 0x22, -1, 0)
    _libc.memset(p, 1, PAGES * 4096)  # page tables first, under the default policy
    _libc.madvise(p, PAGES * 4096, MADV_DONTNEED)
    nodes = _ct.c_ulong(1)
    for _ in range(40):
        cur = _interleave()
        if (cur - lo) % M < 40:
            break
        need = (lo - cur) % M
        step = max(1, int(need * 0.98) - 4) if need > 24 else 1  # stop short, then close in
        if _libc.syscall(SET_MEMPOLICY, MPOL_INTERLEAVE, _ct.byref(nodes), 64) != 0:
            _done.append("set_mempolicy refused")
            return
        while step > 0:
            k = min(step, PAGES)
            _libc.memset(p, 1, k * 4096)
            _libc.madvise(p, k * 4096, MADV_DONTNEED)
            step -= k
        _libc.syscall(SET_MEMPOLICY, MPOL_DEFAULT, None, 0)
    _done.append((v, lo, _interleave()))


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
