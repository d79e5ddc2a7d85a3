import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gate_up_silu_kernel(x_ptr, wg_ptr, wu_ptr, h_ptr, M, N, K,
                        stride_xm, stride_xk, stride_wn, stride_wk, stride_hm, stride_hn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # h = silu(x @ Wg^T) * (x @ Wu^T); both products share each loaded x tile (Wg, Wu have the same strides)
    offs_m = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m[:, None] < M
    mask_n = offs_n[None, :] < N
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_offs = offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk  # W^T tiles, (BLOCK_K, BLOCK_N)
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=mask_m & (offs_k[None, :] < K - k0), other=0.0)
        w_mask = mask_n & (offs_k[:, None] < K - k0)
        acc_g += tl.dot(x, tl.load(wg_ptr + w_offs, mask=w_mask, other=0.0))
        acc_u += tl.dot(x, tl.load(wu_ptr + w_offs, mask=w_mask, other=0.0))
        x_ptrs += BLOCK_K * stride_xk
        w_offs += BLOCK_K * stride_wk
    h = acc_g * tl.sigmoid(acc_g) * acc_u
    tl.store(h_ptr + offs_m[:, None] * stride_hm + offs_n[None, :] * stride_hn, h, mask=mask_m & mask_n)


@triton.jit
def matmul_nt_kernel(a_ptr, w_ptr, out_ptr, M, N, K,
                     stride_am, stride_ak, stride_wn, stride_wk, stride_om, stride_on,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # out = a @ W^T (no bias)
    offs_m = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m[:, None] < M
    mask_n = offs_n[None, :] < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=mask_m & (offs_k[None, :] < K - k0), other=0.0)
        w = tl.load(w_ptrs, mask=mask_n & (offs_k[:, None] < K - k0), other=0.0)
        acc += tl.dot(a, w)
        a_ptrs += BLOCK_K * stride_ak
        w_ptrs += BLOCK_K * stride_wk
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, acc, mask=mask_m & mask_n)


def swiglu_mlp(x, w_gate, w_up, w_down):
    x2 = x.reshape(-1, x.shape[-1])
    M, K = x2.shape
    inter = w_gate.shape[0]
    hidden_out = w_down.shape[0]
    h = torch.empty((M, inter), dtype=x.dtype, device=x.device)
    out = torch.empty((M, hidden_out), dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 64
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(inter, BLOCK_N))
    gate_up_silu_kernel[grid](x2, w_gate, w_up, h, M, inter, K,
                              x2.stride(0), x2.stride(1), w_gate.stride(0), w_gate.stride(1),
                              h.stride(0), h.stride(1),
                              BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(hidden_out, BLOCK_N))
    matmul_nt_kernel[grid](h, w_down, out, M, hidden_out, inter,
                           h.stride(0), h.stride(1), w_down.stride(0), w_down.stride(1),
                           out.stride(0), out.stride(1),
                           BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return out.reshape(*x.shape[:-1], hidden_out)


class ModelNew(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        return swiglu_mlp(x, self.gate.weight, self.up.weight, self.down.weight)
