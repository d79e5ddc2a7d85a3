# drk-corpus: task=tests/corpus/tasks/naive_row_variance.py expect=ok device=any
"""Correct kernel for a task whose reference is the one-pass variance: it computes the same formula with a
blocked sum. Far from zero both lose their digits (differently); the offset probe must not reject it, since
the task's own float32 reference is no more accurate there."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_var(x_ptr, o_ptr, N, BN: tl.constexpr):
    row = tl.program_id(0)
    s = tl.zeros((BN,), dtype=tl.float32)
    s2 = tl.zeros((BN,), dtype=tl.float32)
    for c0 in range(0, N, BN):
        cols = c0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        s += x
        s2 += x * x
    mean = tl.sum(s, axis=0) / N
    tl.store(o_ptr + row, tl.sum(s2, axis=0) / N - mean * mean)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        M, N = x.shape
        out = torch.empty(M, device=x.device, dtype=x.dtype)
        row_var[(M,)](x, out, N, BN=64)
        return out
