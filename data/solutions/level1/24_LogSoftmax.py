"""Row log-softmax in Triton for very long rows (393216 columns): y = x - max - log(sum(exp(x - max))).

One program per row: sweep 1 keeps a per-lane online (max, sum-of-exp) pair, one exp per element,
folded to the row's logsumexp at the end; sweep 2 writes x - logsumexp (no exp needed).
The row length is a compile-time constant (one compile per row length) so every loop has a static
trip count; this also keeps the kernel runnable under the Triton CPU interpreter.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, stride_x_row, stride_y_row, N_COLS: tl.constexpr,
                       BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # int64: row * stride exceeds 2**31 at full size
    x_row = x_ptr + row * stride_x_row
    y_row = y_ptr + row * stride_y_row
    cols = tl.arange(0, BLOCK_SIZE)

    m = tl.full([BLOCK_SIZE], -3.0e38, tl.float32)  # finite start: masked lanes never give inf - inf
    s = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, N_COLS, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < N_COLS, other=float("-inf")).to(tl.float32)
        d = tl.exp(-tl.abs(x - m))  # the one rescale factor that is not 1
        bigger = x > m
        s = tl.where(bigger, s * d + 1.0, s + d)
        m = tl.where(bigger, x, m)
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    lse = row_max + tl.log(row_sum)

    for start in range(0, N_COLS, BLOCK_SIZE):
        offs = start + cols
        mask = offs < N_COLS
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + offs, (x - lse).to(y_ptr.dtype.element_ty), mask=mask)


def triton_log_softmax(x: torch.Tensor, dim: int = 1) -> torch.Tensor:
    # bytes moved: 3 * numel * elem_size (two reads, one write); ~6 FLOPs/element (1 exp)
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
        BLOCK_SIZE = 4096  # with 16 warps: 8 fp32 per thread per chunk, best in an H200 sweep
        log_softmax_kernel[(n_rows,)](x2, y2, x2.stride(0), y2.stride(0), N_COLS=n_cols,
                                      BLOCK_SIZE=BLOCK_SIZE, num_warps=16)
    return y.movedim(-1, dim) if moved else y


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_log_softmax(x, dim=self.dim)
