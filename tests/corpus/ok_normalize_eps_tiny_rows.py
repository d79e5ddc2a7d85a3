# drk-corpus: task=data/queries/010_cosine_logits_normalize.py expect=ok device=any
"""A correct L2 normalisation (divides by max(norm, eps), as F.normalize does): it must stay `ok` under the edge
 probe, whose smallest item sits 1e-8 to 1e-10 down, where its norm is under the eps."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def normalize_kernel(x_ptr, out_ptr, R, D, scale, eps, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < R) & (cols[None, :] < D)
    off = rows[:, None].to(tl.int64) * D + cols[None, :]
    x = tl.load(x_ptr + off, mask=mask, other=0.0)
    nrm = tl.sqrt(tl.sum(x * x, axis=1))
    inv = scale / tl.maximum(nrm, eps)
    tl.store(out_ptr + off, x * inv[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, logit_scale):
        super().__init__()
        self.logit_scale = logit_scale

    def forward(self, x):
        x = x.contiguous()
        D = x.shape[-1]
        R = x.numel() // D
        out = torch.empty_like(x)
        BLOCK_D = triton.next_power_of_2(D)
        BLOCK_R = max(1, 65536 // BLOCK_D)
        normalize_kernel[(triton.cdiv(R, BLOCK_R),)](x, out, R, D, self.logit_scale, 1e-6, BLOCK_R=BLOCK_R, BLOCK_D=BLOCK_D)
        return out
