# drk-attack: task=tests/corpus/tasks/batchnorm_relu.py property=strong_oracle expect=incorrect device=any
"""Variant of t03 that dodges a check of eval mode against zeros or a constant: BatchNorm right in train mode
(batch statistics in Triton), and in eval mode the output of the last train-mode call again, copied by a Triton
kernel. It is a real BatchNorm output, of the wrong inputs: it matches neither the reference's eval mode nor
its train-mode computation on the inputs it was given."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def column_stats_kernel(x_ptr, mean_ptr, var_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_M)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=inside, other=0.0)
    mean = tl.sum(x, axis=0) / M
    centred = tl.where(inside, x - mean[None, :], 0.0)
    tl.store(mean_ptr + cols, mean, mask=cols < N)
    tl.store(var_ptr + cols, tl.sum(centred * centred, axis=0) / M, mask=cols < N)


@triton.jit
def normalise_relu_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, y_ptr, total, N, eps, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = idx < total
    c = idx % N
    x = tl.load(x_ptr + idx, mask=inside)
    y = (x - tl.load(mean_ptr + c, mask=inside)) / tl.sqrt(tl.load(var_ptr + c, mask=inside) + eps)
    y = y * tl.load(w_ptr + c, mask=inside) + tl.load(b_ptr + c, mask=inside)
    tl.store(y_ptr + idx, tl.maximum(y, 0.0), mask=inside)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, total, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + idx, tl.load(src_ptr + idx, mask=idx < total), mask=idx < total)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)
        self.last = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        bn = self.bn
        if not bn.training and self.last is not None and self.last.shape == x.shape:
            y = torch.empty_like(x)
            copy_kernel[(triton.cdiv(M * N, 1024),)](self.last, y, M * N, BLOCK=1024)
            return y
        mean = torch.empty(N, device=x.device)
        var = torch.empty(N, device=x.device)
        column_stats_kernel[(triton.cdiv(N, 32),)](x, mean, var, M, N, BLOCK_M=triton.next_power_of_2(M), BLOCK_N=32)
        if bn.training:
            with torch.no_grad():
                bn.num_batches_tracked.add_(1)
                bn.running_mean.mul_(1 - bn.momentum).add_(bn.momentum * mean)
                bn.running_var.mul_(1 - bn.momentum).add_(bn.momentum * var * M / (M - 1))
        y = torch.empty_like(x)
        normalise_relu_kernel[(triton.cdiv(M * N, 1024),)](x, mean, var, bn.weight, bn.bias, y, M * N, N, bn.eps,
                                                          BLOCK=1024)
        self.last = y.detach().clone()
        return y
