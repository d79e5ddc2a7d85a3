import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_residual_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, H,
                                stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # out[m, n] = x[m, n] + relu(sum_k x[m, k] * w[n, k] + b[n]); the layer is square (H x H)
    offs_m = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m[:, None] < M
    mask_n = offs_n[None, :] < H
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk  # W^T tile
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, H, BLOCK_K):
        x = tl.load(x_ptrs, mask=mask_m & (offs_k[None, :] < H - k0), other=0.0)
        w = tl.load(w_ptrs, mask=mask_n & (offs_k[:, None] < H - k0), other=0.0)
        acc += tl.dot(x, w)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    acc += tl.load(b_ptr + offs_n, mask=offs_n < H, other=0.0)[None, :]
    out_mask = mask_m & mask_n
    residual = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xk, mask=out_mask, other=0.0)
    y = residual + tl.maximum(acc, 0.0)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, y, mask=out_mask)


def linear_relu_residual(x, weight, bias):
    x2 = x.reshape(-1, x.shape[-1])
    M, H = x2.shape
    out = torch.empty_like(x2)
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 64
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(H, BLOCK_N))
    linear_relu_residual_kernel[grid](x2, weight, bias, out, M, H,
                                      x2.stride(0), x2.stride(1), weight.stride(0), weight.stride(1),
                                      out.stride(0), out.stride(1),
                                      BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return out.reshape(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        return linear_relu_residual(x, self.proj.weight, self.proj.bias)
