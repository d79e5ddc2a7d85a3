# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=ok device=any
"""A correct kernel that refuses any input the evaluator wrote into in place: x._version is 0 for a freshly
made tensor and grows with every in-place write, so it tells such a call from the others. The evaluator
must hand every call (trials, probes, timing, the output-caching check that puts new values into the kept
timing inputs) inputs that look fresh, or a candidate answers the calls it can tell apart differently."""
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


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        if x._version == 0:
            return stb(x, self.bias, self.scale)
        raise RuntimeError(f"an input written in place by the evaluator (version {x._version})")
