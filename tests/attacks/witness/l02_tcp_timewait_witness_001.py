"""Witness follower for l02 (task 001_scaled_tanh_bias): a correct candidate that fails with a runtime_error
naming what it found if any TCP/UDP socket it did not open is listed in its network namespace (/proc/net/tcp,
tcp6, udp, udp6): TIME_WAIT entries left by an earlier candidate of the slot. Ports 40000-41791 are decoded as
the l02 message (40000 + 256 * index + byte). Alone (a fresh pool) it is ok."""
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


def _sockets():
    found, msg = [], {}
    for kind in ("tcp", "tcp6", "udp", "udp6"):
        try:
            fd = _os.open("/proc/net/" + kind, 0)
            text = _os.read(fd, 1 << 16).decode(errors="replace")
            _os.close(fd)
        except OSError:
            continue
        for ln in text.splitlines()[1:]:
            f = ln.split()
            if len(f) < 4:
                continue
            port = int(f[1].rsplit(":", 1)[1], 16)
            found.append("%s %s->%s st=%s" % (kind, f[1], f[2], f[3]))
            if 40000 <= port < 41792:
                msg[(port - 40000) // 256] = chr((port - 40000) % 256)
    return found, "".join(msg[k] for k in sorted(msg))


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        found, msg = _sockets()
        if found:
            raise RuntimeError("sockets of an earlier candidate: message %r; %s" % (msg, "; ".join(found[:12])))
        return stb(x, self.bias, self.scale)
