# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=strong_oracle expect=incorrect device=any
"""tanh computed as x * (tanh(x)/x): NaN exactly at x == 0, right everywhere else. randn never draws an exact 0."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_tanh_bias_kernel(x_ptr, bias_ptr, out_ptr, n_elements, hidden, scale, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)  # int64 so offsets cannot overflow for large tensors
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + offsets % hidden, mask=mask, other=0.0)
    # tanh(x) = 1 - 2 / (exp(2x) + 1); saturates cleanly to +-1 when exp over/underflows
    # tanh(x) = x * (tanh(x) / x): fine everywhere except x == 0 exactly, where 0/0 gives NaN
    t = x * ((1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) / x)
    tl.store(out_ptr + offsets, scale * t + bias, mask=mask)


def scaled_tanh_bias(x, bias, scale):
    x = x.contiguous()
    out = torch.empty_like(x)
    n_elements = x.numel()
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    scaled_tanh_bias_kernel[grid](x, bias, out, n_elements, x.shape[-1], scale, BLOCK_SIZE=BLOCK_SIZE)
    return out


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        return scaled_tanh_bias(x, self.bias, self.scale)
