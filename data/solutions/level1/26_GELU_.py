"""Exact (erf-based) GELU as a single-pass Triton elementwise kernel: y = 0.5 * x * (1 + erf(x / sqrt(2)))."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # int64: numel > 2**31 at full size
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_gelu(x: torch.Tensor) -> torch.Tensor:
    # bytes moved: 2 * numel * elem_size; ~15 FLOPs/element (erf polynomial)
    assert x.is_floating_point(), "expected a floating-point tensor"
    if not x.is_contiguous():
        x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return y
    BLOCK_SIZE = 1024  # 128 threads x 8 fp32 (two 16-B accesses each): fastest in an H200 block sweep
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    gelu_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_gelu(x)
