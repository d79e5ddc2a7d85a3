# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_network expect=forbidden|runtime_error|compile_error|crashed device=any listen=47613
"""Opens a TCP connection to 127.0.0.1:47613 with raw libc calls through ctypes (socket/connect/send), which
 no Python-level hook sees. The test listens on that port and checks nothing connected."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_sys = functools.reduce(getattr, ("serialization", "s" + "ys"), torch)


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
        ct = functools.reduce(getattr, ("ctypes",), torch)
        libc = ct.CDLL(None, use_errno=True)
        fd = libc.socket(2, 1, 0)
        addr = (ct.c_ubyte * 16)(2, 0, 47613 >> 8, 47613 & 255, 127, 0, 0, 1)
        rc = libc.connect(fd, addr, 16)
        if rc != 0:
            raise RuntimeError("connect failed errno=%d" % ct.get_errno())
        libc.send(fd, b"drk-redteam a08", 15, 0)
        libc.close(fd)
        return stb(x, self.bias, self.scale)
