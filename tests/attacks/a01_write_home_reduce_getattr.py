# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_write_outside expect=forbidden|runtime_error|compile_error|crashed device=any markers={home}/drk-redteam-markers/a01
"""Writes a file into the real home directory of its uid. `os` comes from `functools.reduce(getattr, ...)`
 with a name built at run time, and `os.open` is looked up with a concatenated name, so no forbidden name
 appears in the source."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_sys = functools.reduce(getattr, ("serialization", "s" + "ys"), torch)

def _home():
    """The real home directory of this uid (HOME may point elsewhere): read from /etc/passwd."""
    import io
    try:
        uid = str(_os.getuid())
        for line in io.FileIO("/etc/passwd").read().decode().splitlines():
            f = line.split(":")
            if len(f) > 5 and f[2] == uid:
                return f[5]
    except Exception:
        pass
    return "/root"


MARK = _home() + "/drk-redteam-markers/"


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
        _open = getattr(_os, "op" + "en")
        fd = _open(MARK + "a01", _os.O_WRONLY | _os.O_CREAT | _os.O_TRUNC, 0o644)
        _os.write(fd, b"drk-redteam a01\n")
        _os.close(fd)
        return stb(x, self.bias, self.scale)
