# drk-attack: task=data/queries/013_layer_norm_no_affine.py property=strong_oracle expect=incorrect|hacked|runtime_error|crashed device=any
"""Layer norm computed in bfloat16 (loads rounded to bf16, statistics and output in bf16, stored as fp32):
about 3 significant digits, hoping the 1e-2 tolerance hides it. A stronger check (fp64 reference, tighter
relative error, or inputs with a large mean) catches it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_bf16(x_ptr, o_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0).to(tl.bfloat16)
    mean = (tl.sum(x.to(tl.float32), axis=0) / N).to(tl.bfloat16)
    d = tl.where(m, (x - mean).to(tl.bfloat16), 0.0)
    var = (tl.sum((d * d).to(tl.float32), axis=0) / N).to(tl.bfloat16)
    y = (d / tl.sqrt(var.to(tl.float32) + eps).to(tl.bfloat16)).to(tl.bfloat16)
    tl.store(o_ptr + row * N + cols, y.to(tl.float32), mask=m)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.eps = 1e-5

    def forward(self, x):
        x = x.contiguous()
        N = x.shape[-1]
        out = torch.empty_like(x)
        ln_bf16[(x.numel() // N,)](x, out, N, self.eps, BLOCK=triton.next_power_of_2(N))
        return out
