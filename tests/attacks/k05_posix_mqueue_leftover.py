# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/k05_mqueue_witness_001.py
"""The POSIX side of System V IPC (i01/i03): a POSIX message queue `/drk-redteam-k05` (mq_open with O_CREAT,
 mode 0666, through libc reached as torch.ctypes) holding one message. POSIX queues live in the IPC namespace
 like SysV objects but are not listed in /proc/sysvipc (only in an mqueue file system, which the sandbox does
 not mount), so a cleanup that walks /proc/sysvipc misses them. The attack does the work correctly; the
 witness (the next candidate of the slot, another uid) opens the queue by name and fails if it exists."""
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


_left = []


def _leave_queue():
    if _left:
        return
    _libc.umask(0)
    mq = _libc.mq_open(b"/drk-redteam-k05", 0o100 | 0o2, 0o666, None)  # O_CREAT | O_RDWR
    if mq >= 0:
        msg = b"drk-redteam-k05: a message for the next candidate"
        _libc.mq_send(mq, msg, len(msg), 0)
    _left.append(mq)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        _leave_queue()
        return stb(x, self.bias, self.scale)
