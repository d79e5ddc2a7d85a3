# drk-corpus: task=data/queries/003_sigmoid_gated_product.py expect=ok|incorrect flags=side_stream device=gpu scale=3
"""Launches the kernel on a side stream (through an alias the static check misses) and does not join it,
so stream-based timing would miss the work. drk times until the device is idle, so the time is counted
(`ok` + `side_stream`), or the race shows first: outputs copied on the current stream before the side
stream wrote them are NaN-poisoned (`incorrect`). Run at 3x each size constant (1.7 GB per input): at
the task's own shapes the kernel is about as short as its launch, so little escapes the timed region and
the flag depends on the host (H200, 2026-12-02: once `ok` unflagged at 1.02x, once `ok` + `side_stream`).
At scale 3 on the H200 the race showed: `incorrect` in trial 2."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gate_kernel(a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(o_ptr + offs, a / (1.0 + tl.exp(-b)), mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.cuda
        if not hasattr(self, "side"):
            self.side = c.Stream()
        out = torch.empty_like(a)
        with c.stream(self.side):
            gate_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out
