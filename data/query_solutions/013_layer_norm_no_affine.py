import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)  # keep padded lanes out of the variance
    var = tl.sum(diff * diff, axis=0) / n_cols
    tl.store(out_ptr + row * n_cols + cols, diff * tl.rsqrt(var + eps), mask=mask)


def layer_norm_no_affine(x, eps):
    x = x.contiguous()
    out = torch.empty_like(x)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    BLOCK_N = triton.next_power_of_2(n_cols)
    num_warps = 8 if BLOCK_N >= 2048 else 4
    layer_norm_kernel[(n_rows,)](x, out, n_cols, eps, BLOCK_N=BLOCK_N, num_warps=num_warps)
    return out


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return layer_norm_no_affine(x, self.eps)
