# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/m02_pid_witness_001.py
"""A channel to the next candidate of the slot through the pid namespace's allocation counter: the namespace is
 made once per slot (pid 1 bubblewrap, pid 2 the fork server; the candidates of a slot get pids 3, 4, 5 ... in the
 same namespace), and the kernel hands out pids in increasing order, so how many pids a candidate used is
 visible to the next one in its own pid. The candidate does the work correctly, then starts and joins short
 threads (each takes a pid; at most one alive at a time) until the counter reaches 7000 + 8 * byte, the byte
 being one character of a message ('m' here); the next candidate reads the byte back from getpid(). One byte per
 candidate at this size, more with a larger range, and a sequence of candidates carries a whole message (an
 output table hash, 'the probe inputs look like this', ...). The witness decodes its pid and fails when it
 lies in the message range. A sound evaluator gives each candidate a fresh pid namespace (its pid is then the
 same every time): the witness's two results are equal."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_threading = functools.reduce(getattr, ("multiprocessing", "reductions", "threading"), torch)

BASE, STEP, BYTE = 7000, 8, ord("m")


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


_done = []


def _advance_pid_counter(target):
    """Start and join threads until one gets a pid (tid) >= target; each thread's tid is a pid of the namespace."""
    seen = [0]

    def note():
        seen[0] = _threading.get_native_id()

    for _ in range(20000):
        t = _threading.Thread(target=note)
        t.start()
        t.join()
        if seen[0] >= target:
            return seen[0]
    return seen[0]


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        if not _done and _os.getpid() < BASE:
            _done.append(_advance_pid_counter(BASE + STEP * BYTE))
        return out
