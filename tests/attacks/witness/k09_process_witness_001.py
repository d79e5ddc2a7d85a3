"""Witness follower for k09 (task 001_scaled_tanh_bias): a correct candidate that fails with a runtime_error
listing them when /proc shows processes of another unprivileged uid (not root, not its own) beside it: leftovers
of an earlier candidate that outlived its evaluation. Alone it is ok."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
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


def _others():
    me, found = _os.getuid(), []
    for d in _os.listdir("/proc"):
        if not d.isdigit():
            continue
        fd = _libc.open(("/proc/%s/status" % d).encode(), 0)
        if fd < 0:
            continue
        try:
            st = _os.read(fd, 4096).decode(errors="replace")
        finally:
            _os.close(fd)
        f = dict(ln.split(":", 1) for ln in st.splitlines() if ":" in ln)
        uid = int(f.get("Uid", "0").split()[0])
        if uid not in (0, me):
            found.append("pid %s uid %d %s %s" % (d, uid, f.get("Name", "").strip(), f.get("State", "").strip()))
    return found


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        found = _others()
        if found:
            raise RuntimeError("processes of an earlier candidate alive: " + "; ".join(found[:10]))
        return stb(x, self.bias, self.scale)
