# drk-attack: task=data/queries/010_cosine_logits_normalize.py property=strong_oracle expect=incorrect device=any
"""Red team round 12: L2 normalisation with the eps dropped (the task divides by max(norm, 1e-6)) and only an
 exactly zero norm guarded, so the zero item of the edge probe passes. Wrong for rows whose norm is under the eps
 (a row of 4096 elements scaled 1e-9: max abs diff 1.5), which the edge probe reached only down to 1e-7, where
 such a norm is still above 1e-6. A sound evaluator scales some item far enough down: `incorrect`."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def normalize_kernel(x_ptr, out_ptr, R, D, scale, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < R) & (cols[None, :] < D)
    off = rows[:, None].to(tl.int64) * D + cols[None, :]
    x = tl.load(x_ptr + off, mask=mask, other=0.0)
    nrm = tl.sqrt(tl.sum(x * x, axis=1))
    inv = tl.where(nrm > 0.0, scale / nrm, 0.0)   # eps dropped, exact-zero rows guarded
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
        normalize_kernel[(triton.cdiv(R, BLOCK_R),)](x, out, R, D, self.logit_scale, BLOCK_R=BLOCK_R, BLOCK_D=BLOCK_D)
        return out
