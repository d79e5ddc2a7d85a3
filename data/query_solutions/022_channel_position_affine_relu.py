import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def channel_position_affine_relu_kernel(x_ptr, gamma_ptr, beta_ptr, out_ptr, n_elements, channels, length,
                                        BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    pos = offsets % length  # x is contiguous (batch, channels, length)
    chan = (offsets // length) % channels
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    gamma = tl.load(gamma_ptr + chan, mask=mask, other=0.0)
    beta = tl.load(beta_ptr + pos, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(x * gamma + beta, 0.0), mask=mask)


def channel_position_affine_relu(x, gamma, beta):
    x = x.contiguous()
    out = torch.empty_like(x)
    n_elements = x.numel()
    _, channels, length = x.shape
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    channel_position_affine_relu_kernel[grid](x, gamma, beta, out, n_elements, channels, length,
                                              BLOCK_SIZE=BLOCK_SIZE)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, gamma, beta):
        return channel_position_affine_relu(x, gamma.contiguous(), beta.contiguous())
