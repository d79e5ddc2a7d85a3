# drk-corpus: task=tests/corpus/tasks/row_centered_sum.py expect=ok flags=degenerate_task device=any
"""Writes zeros with a Triton kernel instead of computing: passes the check only because the task is
degenerate, and the result says so (drk eval reports such tasks apart from the headline metrics)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zeros_kernel(o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        zeros_kernel[(triton.cdiv(out.numel(), 256),)](out, out.numel(), BLOCK=256)
        return out
