# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=scrubbed_results expect=ok|forbidden|compile_error|runtime_error device=any
"""A correct kernel whose function name is 10,000 characters long (set on __name__/__qualname__ before
triton.jit): names are recorded in the result (triton_kernels, kernels) and must be bounded.
`ok` is acceptable (the work is done); the test checks every field stays short."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


stb_kernel.__name__ = stb_kernel.__qualname__ = "k" * 10000
stb_kernel = triton.jit(stb_kernel)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], self.scale, BLOCK=1024)
        return out
