"""Sum over one dimension (keepdim=True) in Triton, for any dim of a contiguous tensor.

The input is viewed as (outer, R, inner) with R the reduced axis. Each program owns BLOCK_K contiguous
`inner` positions of one `outer` slice and walks R in chunks of BLOCK_R rows, accumulating a
[BLOCK_R, BLOCK_K] fp32 tile that is collapsed once at the end: one read of x, one small write.
R is a compile-time constant (static trip count).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim_kernel(x_ptr, y_ptr, INNER, num_k_blocks, R: tl.constexpr,
                   BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    o = (pid // num_k_blocks).to(tl.int64)
    pid_k = pid % num_k_blocks
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    mask_k = offs_k < INNER
    offs_r = tl.arange(0, BLOCK_R)
    x_base = x_ptr + o * R * INNER  # int64: outer*R*inner exceeds 2**31 at full size
    acc = tl.zeros([BLOCK_R, BLOCK_K], tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + offs_r
        ptrs = x_base + rr[:, None].to(tl.int64) * INNER + offs_k[None, :]
        x = tl.load(ptrs, mask=(rr[:, None] < R) & mask_k[None, :], other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(y_ptr + o * INNER + offs_k, total.to(y_ptr.dtype.element_ty), mask=mask_k)


def triton_sum_dim(x: torch.Tensor, dim: int) -> torch.Tensor:
    # bytes moved: numel * elem_size read + numel / R written; 1 FLOP/element
    assert x.is_floating_point(), "expected a floating-point tensor"
    if not x.is_contiguous():
        x = x.contiguous()
    dim = dim % x.dim()
    R = x.shape[dim]
    outer = 1
    for s in x.shape[:dim]:
        outer *= s
    inner = 1
    for s in x.shape[dim + 1:]:
        inner *= s
    out_shape = list(x.shape)
    out_shape[dim] = 1
    y = torch.empty(out_shape, device=x.device, dtype=x.dtype)
    if y.numel() == 0:
        return y
    if R == 0:
        return y.zero_()
    # tile of ~4096 elements: wide along the contiguous inner axis when there is one, else along R
    BLOCK_K = min(triton.next_power_of_2(inner), 128)
    BLOCK_R = min(max(4096 // BLOCK_K, 1), triton.next_power_of_2(R))
    num_k_blocks = triton.cdiv(inner, BLOCK_K)
    grid = (outer * num_k_blocks,)
    sum_dim_kernel[grid](x, y, inner, num_k_blocks, R=R, BLOCK_R=BLOCK_R, BLOCK_K=BLOCK_K, num_warps=8)
    return y


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_sum_dim(x, self.dim)
