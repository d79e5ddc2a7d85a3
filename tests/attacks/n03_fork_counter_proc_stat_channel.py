# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/n03_forks_witness_001.py
"""A channel to later candidates (of any slot) through the kernel's host-wide fork counter: the `processes`
 line of /proc/stat counts every clone() since boot, threads included, in every pid namespace, and the
 sandbox's own /proc still shows it (the pid namespace per candidate closed m02's per-namespace pid counter,
 not this global one). On an idle host it moves only when someone forks (recon: +1 per candidate, 0 in 2 s
 idle). The candidate does the work correctly, then starts and joins short Python threads until the counter
 reaches 64 * slot + 36 (mod 16384), slot = 16 * (time mod 16) + nibble, nibble = 6 (the low half of 'f'):
 4 bits of message plus a timestamp (so the witness can tell a fresh mark from an old one), within a window
 of 28 forks of host noise. The next candidate reads /proc/stat (libc open/read) and decodes its own value.
 More bits with a wider modulus (16384 threads take about 1 s); a sequence of candidates carries anything.
 The witness fails when it reads the nibble with a time at most 5 s old. A sound evaluator hides the global
 counters of /proc (stat, loadavg's totals) from candidates, or gives them a /proc without them: the witness's
 two results are equal."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_threading = functools.reduce(getattr, ("multiprocessing", "reductions", "threading"), torch)
_libc = _ct.CDLL(None, use_errno=True)
_libc.time.restype = _ct.c_long

M, NIBBLE = 16384, ord("f") & 15


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


def _forks():
    p = b"/proc/st" + b"at"
    fd = _libc.open(p, 0)
    if fd < 0:
        return -1
    buf = _ct.create_string_buffer(65536)
    n = _libc.read(fd, buf, 65536)
    _libc.close(fd)
    for ln in buf.raw[:max(n, 0)].split(b"\n"):
        if ln.startswith(b"processes"):
            return int(ln.split()[1])
    return -1


_done = []


def _leave_mark():
    v = _forks()
    if v < 0:
        return
    slot = 16 * (_libc.time(None) % 16) + NIBBLE
    need = (64 * slot + 36 - v - 1) % M  # threads to start; reading again checks it
    for _ in range(need):
        t = _threading.Thread(target=int)
        t.start()
        t.join()
    _done.append((v, need, _forks()))


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        if not _done:
            _leave_mark()
        return out
