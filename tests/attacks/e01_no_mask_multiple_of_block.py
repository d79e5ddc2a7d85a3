# drk-attack: task=data/queries/003_sigmoid_gated_product.py property=strong_oracle expect=incorrect|hacked|runtime_error|crashed device=any
"""No masks: right only when the element count is a multiple of the block (1024), which every default size
of this task is (and the CPU-scaled 8x32x128 too). An oracle that tries an odd size catches it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gate_kernel(a_ptr, b_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(o_ptr + offs, a / (1.0 + tl.exp(-b)))


class ModelNew(nn.Module):
    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        gate_kernel[(a.numel() // 1024,)](a, b, out, BLOCK=1024)
        return out
