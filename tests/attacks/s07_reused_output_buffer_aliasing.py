# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=strong_oracle expect=incorrect device=any
"""Returns the same preallocated output tensor on every call: each output is right when returned, but y1 = m(x1); y2 = m(x2) leaves y1 == y2 (y1 silently overwritten). A judge that copies each output away before the next call never sees it."""
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
    t = 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)
    tl.store(out_ptr + offsets, scale * t + bias, mask=mask)


_OUT = {}


def scaled_tanh_bias(x, bias, scale):
    x = x.contiguous()
    # one output buffer per (shape, dtype, device), reused on every call: the returned tensor of call k is
    # overwritten in place by call k+1, so a caller holding two outputs sees both equal to the latest one
    key = (tuple(x.shape), x.dtype, x.device)
    out = _OUT.get(key)
    if out is None:
        out = _OUT[key] = torch.empty_like(x)
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
