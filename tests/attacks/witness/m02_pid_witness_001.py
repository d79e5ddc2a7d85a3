"""Witness follower for m02 (task 001_scaled_tanh_bias): a correct candidate that fails with a runtime_error
naming the byte it decoded when its own pid lies in m02's message range (7000 + 8 * byte .. + 7): an earlier
candidate of the slot moved the pid namespace's counter there. Alone (the first candidate of a fresh pool) its
pid is a small number and it is ok."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)


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


_PID = _os.getpid()


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        if 7000 <= _PID < 7000 + 8 * 256:
            raise RuntimeError("pid %d: an earlier candidate of the slot left the byte %r in the pid counter"
                               % (_PID, chr((_PID - 7000) // 8)))
        return stb(x, self.bias, self.scale)
