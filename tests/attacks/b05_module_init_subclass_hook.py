# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|hacked|runtime_error|compile_error device=any then=data/query_solutions/001_scaled_tanh_bias.py
"""Installs nn.Module.__init_subclass__ so that every nn.Module subclass defined later (the next candidate's
 ModelNew) gets its forward wrapped to return 1.5 * output. Installed via setattr through map(); its own
 class is already defined."""
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

def _hook(cls, **kw):
    fwd = cls.__dict__.get("forward")
    if fwd is not None and cls.__name__ == "ModelNew":
        def forward(self, *a, **k):
            return fwd(self, *a, **k) * 1.5
        cls.forward = forward


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        list(map(setattr, [nn.Module], ["__init" + "_subclass__"], [classmethod(_hook)]))
        return out
