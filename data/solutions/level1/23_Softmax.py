"""Row softmax (dim=1) in Triton for rows far too long for one block (393216 columns).

One program per row, two sweeps over the row:
  1. online max/sum-of-exp, kept per lane in BLOCK-wide vectors (no cross-warp reduction inside the
     loop, one exp per element via the rescale identity), folded into a row max M and sum S at the end;
  2. y = exp(x - M) / S.
The kernel is autotuned over the chunk width and warp count. The row length is a compile-time
constant (one compile per row length) so every loop has a static trip count; this also keeps the kernel
runnable under the Triton CPU interpreter.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=16),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=8),
    ],
    key=["N_COLS"],
)
@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride_x_row, stride_y_row, N_COLS: tl.constexpr,
                   BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # int64: row * stride exceeds 2**31 at full size
    x_row = x_ptr + row * stride_x_row
    y_row = y_ptr + row * stride_y_row
    cols = tl.arange(0, BLOCK_SIZE)

    # Sweep 1: per-lane running max m and running sum s of exp(x - m).
    # m starts at a finite very negative value so masked lanes (x = -inf) never produce inf - inf.
    m = tl.full([BLOCK_SIZE], -3.0e38, tl.float32)
    s = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, N_COLS, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < N_COLS, other=float("-inf")).to(tl.float32)
        # exactly one of exp(m - m_new), exp(x - m_new) differs from 1, and it equals exp(-|x - m|)
        d = tl.exp(-tl.abs(x - m))
        bigger = x > m
        s = tl.where(bigger, s * d + 1.0, s + d)
        m = tl.where(bigger, x, m)
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    inv_sum = 1.0 / row_sum

    # Sweep 2: normalise and write.
    for start in range(0, N_COLS, BLOCK_SIZE):
        offs = start + cols
        mask = offs < N_COLS
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        y = tl.exp(x - row_max) * inv_sum
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_softmax(x: torch.Tensor, dim: int = 1) -> torch.Tensor:
    # bytes moved: 3 * numel * elem_size (two reads, one write); ~8 FLOPs/element (2 exp)
    assert x.is_floating_point(), "expected a floating-point tensor"
    dim = dim % x.dim()
    moved = dim != x.dim() - 1
    if moved:  # kernel reduces over the last (contiguous) axis
        x = x.movedim(dim, -1)
    if not x.is_contiguous():
        x = x.contiguous()
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols if n_cols > 0 else 0
    if n_rows > 0:
        x2 = x.view(n_rows, n_cols)
        y2 = y.view(n_rows, n_cols)
        softmax_kernel[(n_rows,)](x2, y2, x2.stride(0), y2.stride(0), N_COLS=n_cols)
    return y.movedim(-1, dim) if moved else y


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_softmax(x, dim=1)
