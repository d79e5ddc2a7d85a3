# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=timing_honest expect=hacked|incorrect|no_triton device=gpu
"""Captures the kernel into a CUDA graph on the first call and replays that graph on every later call whatever
 the input (the graph reads the first input's address): cheap replays, stale results once inputs move."""
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
        self.graph = None
        self.static_out = None

    def forward(self, x):
        if self.graph is None:
            static_x = x.clone()
            stb(static_x, self.bias, self.scale)
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_out = stb(static_x, self.bias, self.scale)
            self.static_x = static_x
        self.graph.replay()
        return self.static_out
