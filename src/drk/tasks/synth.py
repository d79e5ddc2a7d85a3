"""Synthetic tasks: a seeded family of small KernelBench-format programs for smoke-testing the pipeline.

What it is: every task applies one elementwise op to a 2-D input and then one "kind" of row-wise
pattern (keep the map, row sum / max / mean, subtract the row mean, row softmax). A *composition* is the
pair (op, kind); `split(seed)` puts each composition in exactly one of held-in (training queries) or
held-out (evaluation), so a held-out task never shares its composition with a training task. Each
composition is instantiated over a few shapes (rows x cols, cols never a power of two, so a kernel
without masks reads or writes past a row) and dtypes (float32, float16).

Every task file starts with a `# drk-synth: op=... kind=...` line: the template teacher
(`drk.engines.template`) reads the composition from it, and a policy sees it in its prompt.

What it deliberately is not: a benchmark. The tasks are tiny so that the CPU evaluator (Triton's
interpreter) judges a candidate in about a second; speedups measured on them say nothing about GPUs.

Files: `write_tasks(out, seed)` (the CLI: `drk tasks synth --out DIR --seed N`) writes, per split,
`OUT/held_in/NNN_<op>_<kind>_<rows>x<cols>_<dtype>.py` (a folder query set: drk's standard first prompt,
with its one-shot example, for real models) and `OUT/held_in.jsonl` (the same tasks in the same order, each
row with a short `prompt`: the task and one line of instructions, for tiny policies such as the CPU smoke
run's), likewise `held_out`, and `OUT/manifest.json` (seed, counts, compositions per split). Both are
ordinary query sets (`--queries OUT/held_in` or `--queries OUT/held_in.jsonl`).

How to test: `pytest tests/test_synth.py`.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import MISSING, asdict, dataclass
from pathlib import Path

from drk.config import option

# op name -> (PyTorch expression, Triton expression), both over a float tensor `x`. The ops stay bounded
# for the evaluator's wide-input probe in float16 (no exp of the input, no large powers).
OPS: dict[str, tuple[str, str]] = {
    "relu": ("torch.relu(x)", "tl.maximum(x, 0.0)"),
    "sigmoid": ("torch.sigmoid(x)", "1.0 / (1.0 + tl.exp(-x))"),
    "silu": ("x * torch.sigmoid(x)", "x / (1.0 + tl.exp(-x))"),
    "square": ("x * x", "x * x"),
    "abs": ("torch.abs(x)", "tl.abs(x)"),
    "scale": ("x * 3.0", "x * 3.0"),
    "shift": ("x + 1.0", "x + 1.0"),
    "negpart": ("torch.clamp(x, max=0.0)", "tl.minimum(x, 0.0)"),
}

# kind -> PyTorch forward body over `y` (the op's result); whether the output keeps the input's shape.
KINDS: dict[str, tuple[str, bool]] = {
    "map": ("y", True),
    "sum": ("y.sum(dim=-1)", False),
    "max": ("y.amax(dim=-1)", False),
    "mean": ("y.mean(dim=-1)", False),
    "center": ("y - y.mean(dim=-1, keepdim=True)", True),
    "softmax": ("torch.softmax(y, dim=-1)", True),
}

ROWS = (4, 8, 16)
COLS = (40, 72, 100, 130)
DTYPES = ("float32", "float16")
HEADER = re.compile(r"^# drk-synth: op=(\w+) kind=(\w+)\s*$", re.M)


class SynthError(ValueError):
    """A bad generator argument or output folder (shown to the user as one line)."""


@dataclass(frozen=True)
class SynthSpec:
    op: str
    kind: str
    rows: int
    cols: int
    dtype: str

    @property
    def composition(self) -> tuple[str, str]:
        return (self.op, self.kind)

    @property
    def name(self) -> str:
        return f"{self.op}_{self.kind}_{self.rows}x{self.cols}_{self.dtype.replace('float', 'f')}"

    def source(self) -> str:
        """The task program (KernelBench format)."""
        op_torch, _ = OPS[self.op]
        body, _ = KINDS[self.kind]
        return f'''# drk-synth: op={self.op} kind={self.kind}
import torch
import torch.nn as nn


class Model(nn.Module):
    """{self.op} of each element, then {self.kind} over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = {op_torch}
        return {body}


rows = {self.rows}
cols = {self.cols}


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.{self.dtype})]


def get_init_inputs():
    return []
'''


# The short first prompt of the JSONL query sets: the task and one line of instructions. drk's standard prompt
# (drk.agent.prompts, used for the .py folders) adds a one-shot example and rules, about 1,000 tokens that a
# tiny policy on a CPU would pay for in every forward pass without learning anything from them.
SHORT_INSTRUCTIONS = ("Rewrite this PyTorch program as `ModelNew`, with Triton kernels doing the work. Reply with "
                      "one ```python block holding the complete module.")


def short_prompt(source: str) -> list[dict]:
    """The chat messages of a task's short first prompt (the `prompt` column of the JSONL query sets)."""
    return [{"role": "user", "content": f"{SHORT_INSTRUCTIONS}\n\n```python\n{source}```"}]


def parse_composition(text: str) -> tuple[str, str] | None:
    """(op, kind) from the `# drk-synth:` line anywhere in `text` (a task file or a prompt holding one)."""
    m = HEADER.search(text or "")
    if not m or m.group(1) not in OPS or m.group(2) not in KINDS:
        return None
    return m.group(1), m.group(2)


def compositions() -> list[tuple[str, str]]:
    return [(op, kind) for kind in KINDS for op in OPS]


def split(seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(held_in, held_out) compositions. Per kind, two ops (chosen by the seed, never the same pair of
    positions for neighbouring kinds) are held out, so every op and every kind occur in both splits:
    held-out tasks test new combinations of known parts, not unknown parts."""
    ops = list(OPS)
    random.Random(seed).shuffle(ops)
    held_out = set()
    for k, kind in enumerate(KINDS):
        held_out |= {(ops[k % len(ops)], kind), (ops[(k + len(ops) // 2) % len(ops)], kind)}
    held_in = [c for c in compositions() if c not in held_out]
    return held_in, [c for c in compositions() if c in held_out]


def generate(seed: int = 0, per_composition: int = 2) -> dict[str, list[SynthSpec]]:
    """{"held_in": [...], "held_out": [...]}: `per_composition` distinct shape/dtype instances of every
    composition, in a seeded order (so the first few tasks of a split already mix ops and kinds)."""
    if per_composition < 1 or per_composition > len(ROWS) * len(COLS) * len(DTYPES):
        raise SynthError(f"per_composition must be 1..{len(ROWS) * len(COLS) * len(DTYPES)}, got {per_composition}")
    rng = random.Random(seed * 1_000_003 + 17)
    instances = [(r, c, d) for r in ROWS for c in COLS for d in DTYPES]
    out: dict[str, list[SynthSpec]] = {}
    for part, comps in zip(("held_in", "held_out"), split(seed)):
        specs = []
        for op, kind in comps:
            for rows, cols, dtype in rng.sample(instances, per_composition):
                specs.append(SynthSpec(op, kind, rows, cols, dtype))
        rng.shuffle(specs)
        out[part] = specs
    return out


@dataclass
class SynthConfig:
    """Every option of `drk tasks synth` (each field its recipe key and flag, the comment its --help line)."""

    out: str = option(MISSING, panel="out")  # folder for held_in/, held_out/ and manifest.json
    seed: int = option(0, panel="in")  # seed of the held-in/held-out split and of the shapes
    per_composition: int = option(2, panel="in", min=1)  # tasks (shape/dtype instances) per op+kind composition


def write_tasks(out: str | Path, seed: int = 0, per_composition: int = 2, overwrite: bool = False) -> dict:
    """Write both splits as task files under `out`; returns the manifest. A folder holding other files is
    refused unless `overwrite` (then only the files this function writes are replaced)."""
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise SynthError(f"--out {root} is a file; give a directory")
    manifest_path = root / "manifest.json"
    manifest = {"generator": "drk.tasks.synth", "seed": seed, "per_composition": per_composition}
    if root.exists() and any(root.iterdir()) and not overwrite:
        try:
            same = {k: json.loads(manifest_path.read_text()).get(k) for k in manifest} == manifest
        except (OSError, ValueError):
            same = False
        if not same:
            raise SynthError(f"{root} is not empty and holds no synthetic set with these settings; "
                             "use another --out or --overwrite")
    specs = generate(seed, per_composition)
    for part, items in specs.items():
        folder = root / part
        if folder.exists():
            for old in folder.glob("*.py"):
                old.unlink()
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for i, spec in enumerate(items, 1):
            (folder / f"{i:03d}_{spec.name}.py").write_text(spec.source())
            rows.append({"id": f"{i:03d}_{spec.name}", "code": spec.source(), "prompt": short_prompt(spec.source())})
        (root / f"{part}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        manifest[part] = {"tasks": len(items), "compositions": sorted({"+".join(s.composition) for s in items}),
                          "files": [f"{i:03d}_{s.name}.py" for i, s in enumerate(items, 1)]}
    manifest["specs"] = {part: [asdict(s) for s in items] for part, items in specs.items()}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
