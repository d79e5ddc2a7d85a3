# drk-corpus: task=tests/corpus/tasks/running_mean.py expect=ok device=any
"""A correct candidate for a task whose buffer every call updates and reads, with both steps in Triton. The
ablation probe skips its launches: the running mean it leaves is garbage, and every later call would read it
unless each checked call starts from the model as built."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def update_mean_kernel(x_ptr, rm_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for m0 in range(0, tl.cdiv(M, BLOCK_M)):
        rows = m0 * BLOCK_M + tl.arange(0, BLOCK_M)
        msk = (rows[:, None] < M) & (cols[None, :] < N)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=msk, other=0.0), axis=0)
    rm = tl.load(rm_ptr + cols, mask=cols < N)
    tl.store(rm_ptr + cols, rm * 0.9 + 0.1 * (acc / M), mask=cols < N)


@triton.jit
def subtract_kernel(x_ptr, rm_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    msk = idx < M * N
    tl.store(y_ptr + idx, tl.load(x_ptr + idx, mask=msk) - tl.load(rm_ptr + idx % N, mask=msk), mask=msk)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        update_mean_kernel[(triton.cdiv(N, 64),)](x, self.running_mean, M, N, BLOCK_M=64, BLOCK_N=64)
        y = torch.empty_like(x)
        subtract_kernel[(triton.cdiv(M * N, 1024),)](x, self.running_mean, y, M, N, BLOCK=1024)
        return y
