"""minGPT "new" GELU (tanh approximation) as a single-pass Triton elementwise kernel.

y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), with tanh from a @triton.jit helper.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _tanh(x):
    # overflow-safe: e = exp(-2|x|) lies in (0, 1]
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def new_gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2 / pi) = 0.79788...
    y = 0.5 * x * (1.0 + _tanh(inner))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_new_gelu(x: torch.Tensor) -> torch.Tensor:
    # bytes moved: 2 * numel * elem_size; ~12 FLOPs/element (1 exp, 1 div)
    assert x.is_floating_point(), "expected a floating-point tensor"
    if not x.is_contiguous():
        x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return y
    BLOCK_SIZE = 1024  # 128 threads x 8 fp32 (two 16-B accesses each): fastest in an H200 block sweep
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    new_gelu_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return triton_new_gelu(x)
