# drk-corpus: task=tests/corpus/tasks/inplace_reference.py expect=ok device=any
"""Correct out-of-place kernel for a task whose reference mutates its input: it passes only if the
candidate receives the original inputs, not the ones the reference doubled."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_plus_one(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        double_plus_one[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
