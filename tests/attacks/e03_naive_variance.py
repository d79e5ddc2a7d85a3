# drk-attack: task=data/queries/015_column_standardize.py property=strong_oracle expect=incorrect|hacked|runtime_error|crashed device=any
"""Column standardisation with the one-pass variance E[x^2] - E[x]^2 in float32: fine for this task's inputs
(uniform in [-1, 3)), catastrophic cancellation for inputs with a large offset (e.g. x + 1000). An oracle that
shifts the input distribution catches it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def col_std(x_ptr, o_ptr, M, N, eps, BM: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    cm = cols < N
    s = tl.zeros((BN,), dtype=tl.float32)
    s2 = tl.zeros((BN,), dtype=tl.float32)
    for r0 in range(0, M, BM):
        rows = r0 + tl.arange(0, BM)
        m = (rows[:, None] < M) & cm[None, :]
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=m, other=0.0)
        s += tl.sum(x, axis=0)
        s2 += tl.sum(x * x, axis=0)
    mean = s / M
    std = tl.sqrt(tl.maximum(s2 / M - mean * mean, 0.0))
    for r0 in range(0, M, BM):
        rows = r0 + tl.arange(0, BM)
        m = (rows[:, None] < M) & cm[None, :]
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=m, other=0.0)
        tl.store(o_ptr + rows[:, None] * N + cols[None, :], (x - mean[None, :]) / (std[None, :] + eps), mask=m)


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        M, N = x.shape
        out = torch.empty_like(x)
        col_std[(triton.cdiv(N, 32),)](x, out, M, N, self.eps, BM=32, BN=32)
        return out
