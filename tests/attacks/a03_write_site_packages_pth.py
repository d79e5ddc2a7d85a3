# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_write_outside expect=forbidden|runtime_error|compile_error|crashed device=any markers={site}/drk_redteam_marker_a03.pth
"""Drops a `.pth` file into site-packages (next to torch): a real attacker would put an `import` line in it
 and run code in every later Python process. The file written here holds only a comment (harmless); the
 test checks that it does not exist afterwards and removes it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import io
_os = torch.__dict__["serialization"].__dict__["".join(map(chr, (111, 115)))]
_sys = torch.__dict__["serialization"].__dict__["".join(map(chr, (115, 121, 115)))]


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
        site = _os.path.dirname(_os.path.dirname(torch.__file__))
        with io.FileIO(_os.path.join(site, "drk_redteam_marker_a03.pth"), "w") as f:
            f.write(b"# drk-redteam marker a03 (harmless comment)\n")
        return stb(x, self.bias, self.scale)
