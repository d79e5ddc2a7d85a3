"""Witness follower for k05 (task 001_scaled_tanh_bias): a correct candidate that fails with a runtime_error
when the POSIX message queue `/drk-redteam-k05` an earlier candidate may have left in the slot's IPC namespace
can be opened (and says how many messages it holds). Alone it is ok."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)


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


def _queue():
    mq = _libc.mq_open(b"/drk-redteam-k05", 0)  # O_RDONLY, no O_CREAT
    if mq < 0:
        return None
    attr = (_ct.c_long * 8)()
    _libc.mq_getattr(mq, attr)
    return "POSIX queue /drk-redteam-k05 left by an earlier candidate (%d message(s))" % attr[3]


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        found = _queue()
        if found:
            raise RuntimeError(found)
        return stb(x, self.bias, self.scale)
