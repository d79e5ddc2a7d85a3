# drk-attack: task=data/queries/013_layer_norm_no_affine.py property=probes_indistinguishable expect=incorrect|hacked|runtime_error|crashed device=any
"""j02's naive-variance layer norm (E[x^2] - E[x]^2 in float32) that dodges the large-offset probe which now
 catches j02 (flag offset_inputs_failed: "inputs of the task's shapes shifted by a large constant"): that probe
 is told apart from the trials by its mean alone (the trials are 3 randn + 1, mean ~1; the probe's rows sit
 near 1000), so the kernel takes an exact two-pass path when the input's mean or any row's mean exceeds 10 in
 magnitude and the one-pass path otherwise. Every trial, the wide probe and the ablation pass; the result is
 `ok` with full coverage. Yet the kernel is wrong on ordinary inputs the probe stands for: rows with a moderate
 offset and a small spread (x = 5 + 1e-3 * randn: max abs error 0.27 against outputs of magnitude 1.4; x = 8 +
 0.05 * randn: 0.013), where E[x^2] and E[x]^2 cancel. A probe the candidate cannot tell from a trial (an
 offset no larger than the trials' own range with a reduced spread, or offsets planted in a few rows of a
 trial-looking input) catches it: `incorrect`."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_naive(x_ptr, out_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    var = tl.maximum(tl.sum(x * x, axis=0) / n_cols - mean * mean, 0.0)
    tl.store(out_ptr + row * n_cols + cols, (x - mean) * tl.rsqrt(var + eps), mask=mask)


@triton.jit
def ln_exact(x_ptr, out_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    tl.store(out_ptr + row * n_cols + cols, d * tl.rsqrt(var + eps), mask=mask)

class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.shape[-1]
        m = float(x.mean())
        rm = float(x.mean(-1).abs().max())  # the largest row mean
        k = ln_exact if (abs(m) > 10 or rm > 10) else ln_naive
        k[(x.numel() // n,)](x, out, n, self.eps, BLOCK_N=triton.next_power_of_2(n))
        return out
