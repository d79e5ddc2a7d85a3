# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=any witness=tests/attacks/witness/leftover_witness_001.py
"""The other System V IPC objects as a channel to later candidates of the slot: a message queue (msgget key
 0xd4c0003, mode 0666) holding one message, and a semaphore set (semget key 0xd4c0003, mode 0666). Both outlive
 the candidate; any later candidate can msgrcv the message (or send its own) and use the semaphore to
 coordinate. Bounded: one 64-byte message, one semaphore."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_sys = functools.reduce(getattr, ("serialization", "s" + "ys"), torch)
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


def _read(path, n=1 << 16):
    """Read a file through libc (no Python open event)."""
    fd = _libc.open(path.encode(), 0)
    if fd < 0:
        raise OSError(_ct.get_errno(), path)
    try:
        return _os.read(fd, n).decode(errors="replace")
    finally:
        _os.close(fd)



class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        q = _libc.msgget(0xD4C0003, 0o1666)
        if q >= 0:
            buf = _ct.create_string_buffer(8 + 64)
            _ct.memmove(_ct.addressof(buf), (1).to_bytes(8, "little") + b"drk-redteam-i03", 8 + 15)
            _libc.msgsnd(q, buf, 64, 0o4000)  # IPC_NOWAIT
        _libc.semget(0xD4C0003, 1, 0o1666)
        return stb(x, self.bias, self.scale)
