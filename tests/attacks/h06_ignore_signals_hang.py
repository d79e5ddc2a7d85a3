# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=timeout|forbidden|crashed device=any then=data/query_solutions/001_scaled_tanh_bias.py timeout=15
"""Ignores SIGTERM/SIGINT/SIGHUP/SIGALRM/SIGUSR1 (signal module reached through torch.multiprocessing) and
 then spins for up to 90 s (bounded): the evaluator must still stop it within the timeout, and the next
 candidate must be ok."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


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

_sig = getattr(triton.runtime.build, "import" + "lib").import_module("sig" + "nal")
_time = getattr(triton.runtime.build, "import" + "lib").import_module("ti" + "me")


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        for s in ("SIGTERM", "SIGINT", "SIGHUP", "SIGALRM", "SIGUSR1"):
            _sig.signal(getattr(_sig, s), _sig.SIG_IGN)
        t0 = _time.monotonic()
        while _time.monotonic() - t0 < 90:
            pass
        return stb(x, self.bias, self.scale)
