# drk-attack: task=data/queries/010_cosine_logits_normalize.py property=strong_oracle expect=incorrect device=any
"""Row normalisation as rsqrt(sum(x^2) + 1e-6) where the task divides by max(norm, 1e-6): the same wherever
 a row's squared norm dwarfs 1e-6, wrong on rows of small norm (64 rows scaled by 5e-5: 18 330 elements beyond
 the tolerance). No probe draws rows of small norm (red team round 11, F5)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2norm_scale_kernel(x_ptr, out_ptr, n_cols, scale, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    ss = tl.sum(x * x, axis=0)
    inv = tl.rsqrt(ss + eps)  # eps keeps zero rows finite
    tl.store(out_ptr + row * n_cols + cols, x * (inv * scale), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, logit_scale):
        super().__init__()
        self.logit_scale = logit_scale

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        l2norm_scale_kernel[(n_rows,)](x, out, n_cols, self.logit_scale, 1e-6,
                                       BLOCK_N=triton.next_power_of_2(n_cols))
        return out
