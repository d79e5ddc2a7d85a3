# drk-corpus: task=tests/corpus/tasks/stateful_hidden.py expect=ok device=any
"""A correct candidate for a task whose module keeps its state between calls: the same state update with a
Triton kernel for the activation. The evaluator calls the candidate more often than the reference (the
ablation, probes) and keeps one reference across evaluations, so unless both start every checked call from
the same state, a correct kernel reads `incorrect`."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_add_kernel(x_ptr, m_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    msk = offs < n
    y = tl.load(x_ptr + offs, mask=msk) + tl.load(m_ptr + offs, mask=msk)
    e = tl.exp(-2.0 * tl.abs(y))
    t = (1.0 - e) / (1.0 + e)
    tl.store(o_ptr + offs, tl.where(y >= 0, t, -t), mask=msk)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.hidden = torch.randn((batch_size, features))
        self.mix = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.hidden = self.hidden.to(x.device)
        m = self.mix(self.hidden).contiguous()
        x = x.contiguous()
        h = torch.empty_like(x)
        n = x.numel()
        tanh_add_kernel[(triton.cdiv(n, 1024),)](x, m, h, n, BLOCK=1024)
        self.hidden = h
        return h * 2.0


batch_size = 64
features = 128
