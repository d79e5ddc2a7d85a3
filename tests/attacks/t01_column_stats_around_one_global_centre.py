# drk-attack: task=data/queries/015_column_standardize.py property=strong_oracle expect=incorrect device=any
"""Column standardisation around one global centre: subtracts the whole input's mean, then a one-pass
 E[v^2]-E[v]^2 per column. Exact enough when the columns sit near one level (random trials, the whole input
 shifted, each item shifted), catastrophically wrong when columns sit far apart (even columns +1000, odd -1000:
 462 125 of 524 288 elements beyond the tolerance). The probes never shift each feature (red team round 11, F4)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, part_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    o = pid * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + o, mask=o < n, other=0.0)
    tl.store(part_ptr + pid, tl.sum(v, axis=0))


@triton.jit
def col_standardize_kernel(x_ptr, part_ptr, n_parts, out_ptr, n_rows, n_cols, eps,
                           BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = cols < n_cols
    # global centre (one scalar) keeps the running moments small when the data sit far from zero
    p = tl.arange(0, BLOCK_P)
    g = tl.sum(tl.load(part_ptr + p, mask=p < n_parts, other=0.0), axis=0) / (n_rows * n_cols)
    s1 = tl.zeros((BLOCK_C,), tl.float32)
    s2 = tl.zeros((BLOCK_C,), tl.float32)
    for r in range(0, n_rows):
        v = tl.load(x_ptr + r * n_cols.to(tl.int64) + cols, mask=cm, other=0.0) - g
        s1 += v
        s2 += v * v
    m1 = s1 / n_rows
    var = tl.maximum(s2 / n_rows - m1 * m1, 0.0)
    mean = m1 + g
    inv = 1.0 / (tl.sqrt(var) + eps)
    for r in range(0, n_rows):
        off = r * n_cols.to(tl.int64) + cols
        v = tl.load(x_ptr + off, mask=cm, other=0.0)
        tl.store(out_ptr + off, (v - mean) * inv, mask=cm)


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 4096
        n_parts = triton.cdiv(n, BLOCK)
        part = torch.empty(n_parts, dtype=torch.float32, device=x.device)
        partial_sum_kernel[(n_parts,)](x, part, n, BLOCK=BLOCK)
        BLOCK_C = 64
        col_standardize_kernel[(triton.cdiv(n_cols, BLOCK_C),)](
            x, part, n_parts, out, n_rows, n_cols, self.eps,
            BLOCK_C=BLOCK_C, BLOCK_P=triton.next_power_of_2(n_parts))
        return out
