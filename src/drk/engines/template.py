"""The template teacher: an engine that writes Triton kernels for synthetic tasks (`drk.tasks.synth`)
from templates, with a controlled mix of good, slow and wrong answers, and that reacts to feedback.

What it is: `TemplateTeacher`, an `Engine` (`make_engine(EngineSpec(model="template", kind="template"))`,
`drk collect --engine template`), so its episodes run through the same loop and the same evaluator as a
real teacher's. It reads the task's composition from the `# drk-synth:` line in the first user message
and answers with one of these variants (`kernel_source(op, kind, variant)`):

    fast        one fused kernel, one program per row, masked loads/stores     (correct)
    two_pass    the op in a flat kernel into a float32 buffer, then the row kernel   (correct, slower)
    small_block map only: a 2-D grid of 16-wide column blocks                   (correct, slower)
    nomask      no masks and no padding of the tail: reads/writes past a row    (wrong)
    loose_mask  `fast` with the mask `cols < BLOCK`, always true: nomask's error,   (wrong)
                one token away from `fast` (drawn only when named in `wrong_variants`)
    wrong_op    another elementwise op than the task's                         (wrong)
    wrong_axis  reductions only: walks down columns instead of along the row    (wrong)

First turn: wrong with probability `wrong` (one of `wrong_variants` that exists for the task's kind; by
default nomask, wrong_op and wrong_axis), slow with `slow`, else fast. Later turns read the last
feedback: after a failed turn it answers `fast` with probability `fix` (a fixed answer), else draws
again like a first turn; after a correct slow turn it answers `fast` with probability `fix`, else repeats
itself. Samples are seeded by (`seed`, the request's seed, the conversation, how many times this engine
has answered that conversation), so a collection run from scratch is reproducible.

What it deliberately is not: a model. It knows only the synthetic family; for any other task it replies
without code (the episode loop turns that into a "no code" turn). The variants differ in a few decision
points (mask, op, axis, launch shape) so that a tiny policy fine-tuned on them can learn the templates
and RL can move probability between them.

How to test: `pytest tests/test_synth.py` (runs variants through the real CPU evaluator).
"""
from __future__ import annotations

import hashlib
import random
import re

from drk.engines.base import FINISH_STOP, EngineError, EngineSpec, Generation, SamplingParams, UsageCounter
from drk.tasks.synth import KINDS, OPS, parse_composition

CORRECT_FAST = ("fast",)
CORRECT_SLOW = ("two_pass", "small_block")
WRONG = ("nomask", "wrong_op", "wrong_axis", "loose_mask")
DEFAULT_WRONG = ("nomask", "wrong_op", "wrong_axis")  # what `wrong` draws from unless `wrong_variants` is given
VARIANTS = CORRECT_FAST + CORRECT_SLOW + WRONG

# The op a `wrong_op` answer computes instead: always one whose values differ on random normal inputs.
WRONG_OP = {"relu": "abs", "sigmoid": "silu", "silu": "sigmoid", "square": "abs", "abs": "relu",
            "scale": "shift", "shift": "scale", "negpart": "relu"}

# Row-pattern bodies: lines after `y = <op>` inside the row kernel, with `{where}` standing for the padding
# of the tail (dropped by `nomask`, which makes the reduction read the next row's values).
_BODY = {
    "map": "    tl.store(out_ptr + row * n_cols + cols, y{m})\n",
    "sum": "{where0}    tl.store(out_ptr + row, tl.sum(y, axis=0))\n",
    "mean": "{where0}    tl.store(out_ptr + row, tl.sum(y, axis=0) / n_cols)\n",
    "max": "{whereinf}    tl.store(out_ptr + row, tl.max(y, axis=0))\n",
    "center": "{where0}    tl.store(out_ptr + row * n_cols + cols, y - tl.sum(y, axis=0) / n_cols{m})\n",
    "softmax": ("{whereinf}    y = tl.exp(y - tl.max(y, axis=0))\n"
                "    tl.store(out_ptr + row * n_cols + cols, y / tl.sum(y, axis=0){m})\n"),
}

_HEAD = """import torch
import torch.nn as nn
import triton
import triton.language as tl
"""

_ROW_KERNEL = """

@triton.jit
def row_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
{mask_line}    x = tl.load(x_ptr + {offsets}{load_mask}).to(tl.float32)
    y = {expr}
{body}"""

_MAP_KERNEL = """

@triton.jit
def map_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, {expr}, mask=mask)
"""

_BLOCK_KERNEL = """

@triton.jit
def block_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_cols + cols, {expr}, mask=mask)
"""

_MODEL = """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = {alloc}
{launch}        return out
"""

_ROW_LAUNCH = "        row_kernel[(x.shape[0],)]({src}, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))\n"
_TWO_PASS_LAUNCH = ("        tmp = torch.empty(x.shape, device=x.device, dtype=torch.float32)\n"
                    "        map_kernel[(triton.cdiv(x.numel(), 64),)](x, tmp, x.numel(), BLOCK=64)\n")
_BLOCK_LAUNCH = "        block_kernel[(x.shape[0], triton.cdiv(x.shape[1], 16))](x, out, x.shape[1], BLOCK=16)\n"

REPLY_INTRO = "One program per row, computed in float32."
NO_TEMPLATE = "I have no template for this task: it is not from the synthetic family (no `# drk-synth:` line)."


def variants_for(kind: str) -> tuple[str, ...]:
    """The variants that exist for a kind (`small_block` only for maps, `wrong_axis` only for row patterns)."""
    return tuple(v for v in VARIANTS if not (v == "small_block" and kind != "map")
                 and not (v == "wrong_axis" and kind == "map"))


def kernel_source(op: str, kind: str, variant: str = "fast") -> str:
    """The complete candidate module for the composition (op, kind) in the given variant."""
    if op not in OPS or kind not in KINDS:
        raise ValueError(f"unknown composition {op}+{kind}")
    if variant not in variants_for(kind):
        raise ValueError(f"variant {variant!r} does not exist for kind {kind!r}; use one of {variants_for(kind)}")
    expr = OPS[WRONG_OP[op] if variant == "wrong_op" else op][1]
    alloc = "torch.empty_like(x)" if KINDS[kind][1] else "torch.empty(x.shape[0], device=x.device, dtype=x.dtype)"
    if variant == "small_block":
        return _HEAD + _BLOCK_KERNEL.format(expr=expr) + _MODEL.format(alloc=alloc, launch=_BLOCK_LAUNCH)
    masked = variant != "nomask"
    body = _BODY[kind].format(m=", mask=mask" if masked else "",
                              where0="    y = tl.where(mask, y, 0.0)\n" if masked else "",
                              whereinf='    y = tl.where(mask, y, float("-inf"))\n' if masked else "")
    row = _ROW_KERNEL.format(
        mask_line=f"    mask = cols < {'BLOCK' if variant == 'loose_mask' else 'n_cols'}\n" if masked else "",
        offsets="cols * tl.num_programs(0) + row" if variant == "wrong_axis" else "row * n_cols + cols",
        load_mask=", mask=mask, other=0.0" if masked else "",
        expr="x" if variant == "two_pass" else expr, body=body)
    if variant == "two_pass":
        launch = _TWO_PASS_LAUNCH + _ROW_LAUNCH.format(src="tmp")
        return _HEAD + _MAP_KERNEL.format(expr=expr) + row + _MODEL.format(alloc=alloc, launch=launch)
    return _HEAD + row + _MODEL.format(alloc=alloc, launch=_ROW_LAUNCH.format(src="x"))


def reply_text(code: str) -> str:
    return f"{REPLY_INTRO}\n\n```python\n{code}```"


_VERDICT = re.compile(r"Verdict: (\w+)")


class TemplateTeacher:
    """`Engine` over the templates. Options (`EngineSpec.extra`, `--engine-opt KEY=VALUE`): `wrong`, `slow`,
    `fix` (probabilities, see the module docstring), `wrong_variants` (the wrong variants to draw from: a
    list or a comma-separated string; a kind lacking all of them falls back to the default ones it has)
    and `seed`."""

    name = "template"

    def __init__(self, wrong: float = 0.5, slow: float = 0.2, fix: float = 0.8, seed: int = 0,
                 wrong_variants: str | list[str] | tuple[str, ...] = DEFAULT_WRONG) -> None:
        for key, p in (("wrong", wrong), ("slow", slow), ("fix", fix)):
            if not 0.0 <= float(p) <= 1.0:
                raise EngineError(f"template teacher: {key} must be a probability in [0, 1], got {p}")
        if float(wrong) + float(slow) > 1.0:
            raise EngineError(f"template teacher: wrong + slow must be at most 1, got {wrong} + {slow}")
        names = wrong_variants.split(",") if isinstance(wrong_variants, str) else list(wrong_variants)
        names = [n.strip() for n in names if n.strip()]
        if not names or any(n not in WRONG for n in names):
            raise EngineError(f"template teacher: wrong_variants must name some of {', '.join(WRONG)}, "
                              f"got {wrong_variants!r}")
        self.wrong, self.slow, self.fix, self.seed = float(wrong), float(slow), float(fix), int(seed)
        self.wrong_variants = tuple(names)
        self._usage = UsageCounter()
        self._seen: dict[str, int] = {}

    @classmethod
    def from_spec(cls, spec: EngineSpec) -> "TemplateTeacher":
        return cls(**spec.extra)

    def usage(self) -> dict:
        return self._usage.snapshot()

    def draw(self, kind: str, rng: random.Random) -> str:
        """A first-turn variant: wrong, slow or fast with the configured probabilities."""
        u = rng.random()
        options = variants_for(kind)
        if u < self.wrong:
            wrong = [v for v in options if v in self.wrong_variants] or [v for v in options if v in DEFAULT_WRONG]
            return rng.choice(wrong)
        if u < self.wrong + self.slow:
            return rng.choice([v for v in options if v in CORRECT_SLOW])
        return "fast"

    def choose(self, messages: list[dict], rng: random.Random) -> str | None:
        """The variant to answer `messages` with; None when the task is not synthetic."""
        users = [m["content"] for m in messages if m.get("role") == "user"]
        comp = parse_composition(users[0]) if users else None
        if comp is None:
            return None
        kind = comp[1]
        replies = [m["content"] for m in messages if m.get("role") == "assistant"]
        if not replies:
            return self.draw(kind, rng)
        m = _VERDICT.search(users[-1])
        if m and m.group(1) == "ok":
            if "def map_kernel" in replies[-1] or "def block_kernel" in replies[-1]:  # correct but slow
                return "fast" if rng.random() < self.fix else "same"
            return "same"
        return "fast" if rng.random() < self.fix else self.draw(kind, rng)

    def reply(self, messages: list[dict], rng: random.Random) -> str:
        variant = self.choose(messages, rng)
        if variant is None:
            return NO_TEMPLATE
        if variant == "same":
            return next(m["content"] for m in reversed(messages) if m.get("role") == "assistant")
        users = [m["content"] for m in messages if m.get("role") == "user"]
        op, kind = parse_composition(users[0])  # type: ignore[misc]
        return reply_text(kernel_source(op, kind, variant))

    def generate(self, conversations: list[list[dict]], params: SamplingParams) -> list[list[Generation]]:
        out = []
        for conv in conversations:
            key = repr((self.seed, params.seed, [(m.get("role"), m.get("content")) for m in conv]))
            # The episode loop asks for n=1 per episode, so the samples of one task arrive as identical
            # conversations: the k-th time this engine sees a conversation it draws sample k, else every
            # sample of a task would be the same answer.
            first = self._seen.get(key, 0)
            self._seen[key] = first + params.n
            gens = []
            for i in range(first, first + params.n):
                digest = hashlib.sha256(f"{key}|{i}".encode()).digest()
                text = self.reply(conv, random.Random(int.from_bytes(digest[:8], "big")))
                words = sum(len(m.get("content", "").split()) for m in conv)
                usage = {"prompt_tokens": words, "completion_tokens": len(text.split())}  # words, not tokens
                self._usage.add(requests=1, **usage)
                gens.append(Generation(text=text, finish_reason=FINISH_STOP, usage=usage))
            out.append(gens)
        return out
