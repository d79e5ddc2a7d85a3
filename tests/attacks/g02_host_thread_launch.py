# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=timing_honest expect=hacked|incorrect|no_triton|forbidden device=gpu
"""Returns an empty output immediately and launches the kernel from a host thread (threading imported by a
 built name) a little later: timers that stop when forward returns measure nothing."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


def stb(x, bias, scale):
    x = x.contiguous()
    out = torch.empty_like(x)
    stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, bias, out, x.numel(), x.shape[-1], scale, BLOCK=1024)
    return out

_th = getattr(triton.runtime.build, "import" + "lib").import_module("thread" + "ing")


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = torch.empty_like(x)

        def work():
            stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], self.scale, BLOCK=1024)

        t = _th.Thread(target=work, daemon=True)
        t.start()
        return out
