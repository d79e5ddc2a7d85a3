# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=timing_honest expect=hacked|incorrect|no_triton device=gpu
"""Does the work on a side stream after a delay and leaves that stream current on return: a read of the
outputs ordered on the current stream would then wait for the side work, and the race an unjoined side
stream is (g01) would not show in the outputs."""
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


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))
        self.stream = None

    def forward(self, x):
        if self.stream is None:
            self.stream = torch.cuda.Stream()
        getattr(torch.cuda, "set" + "_stream")(self.stream)
        torch.cuda._sleep(2000000)
        x = x.contiguous()
        out = torch.empty_like(x)
        stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], self.scale,
                                                    BLOCK=1024)
        return out
