# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=runs_unprivileged expect=ok|forbidden|runtime_error|compile_error|crashed device=any markers={etc}/drk-redteam-marker-a19
"""Checks whether it runs as root and, if so, uses it: writes into /etc, tries setuid(0) and chroot("/") (both
 harmless for the host). The test checks the /etc marker is absent. Running as root, it also returns garbage,
so `ok` means it ran unprivileged (with OS isolation its attempts never start: it is then a correct kernel)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import io
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
        uid = _os.getuid()
        notes = ["uid=%d" % uid]
        if uid == 0:
            with io.FileIO("/etc/drk-redteam-marker-a19", "w") as f:
                f.write(b"drk-redteam a19\n")
            getattr(_os, "set" + "uid")(0)
            getattr(_os, "ch" + "root")("/")
            notes.append("root powers used")
            return torch.zeros_like(x)
        return stb(x, self.bias, self.scale)
