"""Tanh as a single-pass Triton elementwise kernel, using an overflow-safe exp-based @triton.jit helper."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _tanh(x):
    # tanh(|x|) = (1 - e) / (1 + e) with e = exp(-2|x|) in (0, 1]: never overflows; sign restored after
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # int64: numel > 2**31 at full size
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, _tanh(x).to(y_ptr.dtype.element_ty), mask=mask)


def triton_tanh(x: torch.Tensor) -> torch.Tensor:
    # bytes moved: 2 * numel * elem_size; ~6 FLOPs/element (1 exp, 1 div)
    assert x.is_floating_point(), "expected a floating-point tensor"
    if not x.is_contiguous():
        x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return y
    BLOCK_SIZE = 1024  # 128 threads x 8 fp32 (two 16-B accesses each): fastest in an H200 block sweep
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    tanh_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_tanh(x)
