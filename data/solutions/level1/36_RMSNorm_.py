"""RMSNorm over dim=1 (the feature axis) of an (N, C, *spatial) tensor in Triton.

y[n, c, s] = x[n, c, s] / sqrt(mean_c(x[n, :, s]^2) + eps)

Each program owns a [BLOCK_C, BLOCK_S] tile: BLOCK_S contiguous spatial positions of one sample across
the channels. @triton.heuristics picks the tile from C: when all channels fit one tile (C <= 64, the
usual case) the kernel reads x once and writes y once; otherwise it loops over channel chunks twice
(sum of squares, then scale), the second sweep mostly hitting L2. C is a compile-time constant.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({
    "BLOCK_C": lambda args: min(triton.next_power_of_2(args["C"]), 64),
    "BLOCK_S": lambda args: min(max(8192 // min(triton.next_power_of_2(args["C"]), 64), 128), 2048),
    "ONE_PASS": lambda args: args["C"] <= 64,
})
@triton.jit
def rmsnorm_kernel(x_ptr, y_ptr, S, eps, C: tl.constexpr,
                   BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr, ONE_PASS: tl.constexpr):
    # flat 1-D grid: (sample, spatial block) pairs, spatial blocks fastest
    pid = tl.program_id(0)
    num_s_blocks = tl.cdiv(S, BLOCK_S)
    n = (pid // num_s_blocks).to(tl.int64)
    pid_s = pid % num_s_blocks
    base = n * C * S  # int64: N*C*S exceeds 2**31 at full size
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    mask_s = offs_s < S
    offs_c = tl.arange(0, BLOCK_C)
    inv_c = 1.0 / C

    if ONE_PASS:
        mask = (offs_c[:, None] < C) & mask_s[None, :]
        offs = base + offs_c[:, None].to(tl.int64) * S + offs_s[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        ms = tl.sum(x * x, axis=0) * inv_c
        r = 1.0 / tl.sqrt(ms + eps)
        tl.store(y_ptr + offs, (x * r[None, :]).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK_C, BLOCK_S], tl.float32)
        for c0 in range(0, C, BLOCK_C):
            cc = c0 + offs_c
            mask = (cc[:, None] < C) & mask_s[None, :]
            offs = base + cc[:, None].to(tl.int64) * S + offs_s[None, :]
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            acc += x * x
        ms = tl.sum(acc, axis=0) * inv_c
        r = 1.0 / tl.sqrt(ms + eps)
        for c0 in range(0, C, BLOCK_C):
            cc = c0 + offs_c
            mask = (cc[:, None] < C) & mask_s[None, :]
            offs = base + cc[:, None].to(tl.int64) * S + offs_s[None, :]
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_ptr + offs, (x * r[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


def triton_rmsnorm(x: torch.Tensor, eps: float) -> torch.Tensor:
    # bytes moved: 2 * numel * elem_size when C <= 64 (else ~3x); ~4 FLOPs/element
    assert x.is_floating_point(), "expected a floating-point tensor"
    assert x.dim() >= 2, "expected (batch, features, *)"
    if not x.is_contiguous():
        x = x.contiguous()
    y = torch.empty_like(x)
    N, C = x.shape[0], x.shape[1]
    S = x.numel() // (N * C) if N * C > 0 else 0
    if x.numel() == 0:
        return y
    grid = lambda meta: (triton.cdiv(S, meta["BLOCK_S"]) * N,)
    rmsnorm_kernel[grid](x, y, S, float(eps), C, num_warps=8)
    return y


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_rmsnorm(x, self.eps)
