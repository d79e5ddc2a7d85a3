# drk-corpus: task=tests/corpus/tasks/global_batch_state.py expect=ok device=any scale=0.125
"""A correct candidate that, like its task, reads the module-level `batch_size` in __init__. Where the judge
scales the task's sizes (CPU path, memory, a requested scale), the candidate's copy of the constant must take
the same value, or its state has the unscaled batch and the evaluation fails on the evaluator's rewrite."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_tanh_kernel(x_ptr, s_ptr, b_ptr, o_ptr, n, features, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    s = tl.load(s_ptr + offs % features, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    y = x * s + b
    e = tl.exp(-2.0 * tl.abs(y))
    t = (1.0 - e) / (1.0 + e)
    tl.store(o_ptr + offs, tl.where(y >= 0, t, -t), mask=m)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.bias = torch.randn((batch_size, features))
        self.scale = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        b = self.bias.to(x.device).contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        fused_tanh_kernel[(triton.cdiv(n, 1024),)](x, self.scale, b, out, n, x.shape[1], BLOCK=1024)
        return out


batch_size = 512
features = 256
