"""Prompts: the first-turn prompt (task + a one-shot example + instructions) and the feedback turn.

Written in the project's own words. The one-shot example is a small kernel written for drk: an
elementwise fused bias + GELU-tanh with its `ModelNew`, short enough to read at a glance and showing the
conventions the evaluator checks (Triton does the work, same constructor signature, outputs allocated,
masks on the tail, int64 offsets).
"""
from __future__ import annotations

from drk.agent.feedback import feedback_text
from drk.gym.types import EvalResult

SYSTEM_PROMPT = ("You are an expert GPU kernel engineer. You rewrite PyTorch programs as fast, correct Triton "
                 "kernels and improve them from the feedback of an evaluator.")

EXAMPLE_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        return torch.nn.functional.gelu(x + self.bias, approximate="tanh")


batch_size = 256
features = 4096


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
'''

EXAMPLE_SOLUTION = '''import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, features, BLOCK: tl.constexpr):
    # one read of x, one write of out: 8 bytes per element
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask) + tl.load(bias_ptr + offs % features, mask=mask)
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
    tanh = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tanh), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        bias_gelu_kernel[(triton.cdiv(n, 1024),)](x, self.bias, out, n, x.shape[-1], BLOCK=1024)
        return out
'''

INSTRUCTIONS = """Write a new version of the program above, named `ModelNew`, whose forward pass runs custom Triton kernels.

Rules:
- Keep the constructor signature and the forward signature of `Model`; create parameters the same way (same modules, same order) so that a seeded `ModelNew(*get_init_inputs())` holds the same weights as `Model`.
- Your Triton kernels must do the computation. Calling the PyTorch operators you are replacing, or launching a kernel whose result is not used, counts as no Triton.
- Outputs must match the reference within atol = rtol = 1e-2 on random inputs; do not modify the inputs.
- Import only torch, triton and the standard math helpers (math, functools); no files, processes, threads or network.
- Aim for speed: fuse operations, keep memory traffic low, pick sensible block sizes.

Reply with a short explanation and then exactly one ```python code block containing the complete module (imports, kernels, `ModelNew`)."""


def first_prompt(task_source: str) -> str:
    """The first user message of an episode."""
    return (f"Here is a PyTorch program:\n\n```python\n{task_source.strip()}\n```\n\n"
            f"For example, for this program:\n\n```python\n{EXAMPLE_REFERENCE.strip()}\n```\n\n"
            f"a good answer is:\n\n```python\n{EXAMPLE_SOLUTION.strip()}\n```\n\n{INSTRUCTIONS}")


def feedback_prompt(result: EvalResult | None, extraction_error: str = "", max_chars: int = 2000) -> str:
    """The user message after a turn: the evaluator's feedback and what to do next."""
    if result is None:
        return (f"Feedback: {extraction_error or 'no code found'}. Reply with exactly one ```python code block "
                "containing the complete module that defines `ModelNew`.")
    body = feedback_text(result, max_chars=max_chars)
    if result.ok:
        ask = "Make it faster while keeping it correct. Reply with the complete improved module in one ```python block."
    else:
        ask = "Fix the problem. Reply with the complete corrected module in one ```python block."
    return f"Feedback from the evaluator:\n{body}\n\n{ask}"


def initial_messages(task_source: str, system: bool = True) -> list[dict]:
    msgs = [{"role": "system", "content": SYSTEM_PROMPT}] if system else []
    return msgs + [{"role": "user", "content": first_prompt(task_source)}]
