# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=strong_oracle expect=hacked|incorrect|no_triton device=gpu
"""Computes the output correctly on the caller's stream, then overwrites the input with it on a side stream it
leaves unjoined, after a delay: an input check that read the inputs in the caller's stream order, before the
device is idle, would miss the in-place write that destroys the caller's input."""
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
        out = torch.empty_like(x)
        stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], self.scale,
                                                    BLOCK=1024)
        side = self.stream
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(2000000)
            x.copy_(out)  # in place in the input, after the caller's stream has moved on
        return out
