# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_write_outside expect=forbidden|runtime_error|compile_error|crashed device=any markers={repo}/drk-redteam-marker-a02
"""Writes into the repository the evaluator runs from (found through sys.modules["drk"]), through
 `torch.utils._pytree.tree_map(operator.methodcaller("write", ...), [io.FileIO(...)])`, so the write call
 is made from library code."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import io
import torch.utils._pytree as pytree
import operator
_os = operator.attrgetter("serialization." + "o" + "s")(torch)
_sys = operator.attrgetter("serialization." + "sy" + "s")(torch)


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


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        drk = _sys.modules.get("drk")
        repo = _os.path.dirname(_os.path.dirname(_os.path.dirname(drk.__file__)))
        f = io.FileIO(_os.path.join(repo, "drk-redteam-marker-a02"), "w")
        pytree.tree_map(operator.methodcaller("write", b"drk-redteam a02\n"), [f])
        f.close()
        return stb(x, self.bias, self.scale)
