"""Shape scaling: rewrite a task's module-level size constants so its inputs fit a byte budget.

KernelBench problems declare their sizes as module-level integer constants (`batch_size = 4096`,
`N = 2048 * 2`) that `get_inputs()` reads. Scaling rewrites those assignments in the source (derived
constants are recomputed from the scaled ones), so the scaled task is again a plain task file. Used for
the CPU path (the Triton interpreter is slow), for quick checks, for tasks too large for a device, and to
test correctness at more than one shape.

What is scaled: integer constants >= `MIN_SCALABLE` whose names do not say they are a kernel size, stride,
padding, group or head count, an axis, etc. Scaled values keep divisibility by every unscaled constant that
divided them (so `channels % groups == 0` survives) and by their power-of-two factor up to 8.
What is not: sizes hard-coded inside `Model` or `get_inputs`; then the task cannot be scaled and the caller
gets a `ScalingError` with the reason.

This module is pure source manipulation; measuring input bytes needs torch and happens in the judge
process (`fit_budget` takes the measuring function).
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Callable

MIN_SCALABLE = 16
# Name tokens (split on "_" and digits) that mark a constant as structural, not a size.
_PROTECTED_TOKENS = {"kernel", "ksize", "stride", "strides", "pad", "padding", "dilation", "groups", "group",
                     "heads", "axis", "eps", "epsilon", "seed", "pool", "window", "topk", "experts", "bins",
                     "order", "power", "exponent", "layers", "nlayers", "iters", "iterations", "steps", "nheads"}
_PROTECTED_NAMES = re.compile(r"^(top_k|scale_factor|reduce_dim|reduction_dim|dim_index)$", re.I)
_BIN_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
            ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a ** b, ast.Mod: lambda a, b: a % b}


class ScalingError(ValueError):
    """The task cannot be brought under the budget (or has nothing to scale)."""


@dataclass
class SizeConstant:
    name: str
    value: int | tuple          # an int, or a tuple of ints (`input_shape = (32768,)`)
    node: ast.Assign
    depends_on: list[str] = field(default_factory=list)  # other constants its expression uses

    @property
    def derived(self) -> bool:
        return bool(self.depends_on)


@dataclass
class ScalePlan:
    factor: float
    constants: dict[str, int | tuple]   # every size constant's value as used (scaled or not)
    original: dict[str, int | tuple]
    input_bytes: int | None = None
    source: str = ""

    @property
    def scaled(self) -> bool:
        return self.constants != self.original


def _eval(node: ast.AST, env: dict, deps: list[str]):
    """Value of an integer (or tuple-of-integers) expression over known constants, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        deps.append(node.id)
        return env[node.id]
    if isinstance(node, ast.Tuple):
        vals = [_eval(e, env, deps) for e in node.elts]
        return tuple(vals) if vals and all(isinstance(v, int) for v in vals) else None
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN_OPS:
        a, b = _eval(node.left, env, deps), _eval(node.right, env, deps)
        if not isinstance(a, int) or not isinstance(b, int):
            return None
        try:
            v = _BIN_OPS[type(node.op)](a, b)
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
        return v if isinstance(v, int) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _eval(node.operand, env, deps)
        return -v if isinstance(v, int) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" and len(node.args) == 1:
        v = _eval(node.args[0], env, deps)
        return v if isinstance(v, int) else None
    return None


def _bind(target: ast.AST, value, out: list[tuple[str, object]]) -> bool:
    if isinstance(target, ast.Name):
        out.append((target.id, value))
        return True
    if isinstance(target, ast.Tuple) and isinstance(value, tuple) and len(target.elts) == len(value):
        return all(_bind(t, v, out) for t, v in zip(target.elts, value))
    return False


def size_constants(source: str) -> list[SizeConstant]:
    """Module-level integer (or tuple-of-integer) constants, in order: `N = 2048 * 2`, `h = w = 256`,
    `D, H, W = 16, 32, 32`, `input_shape = (32768,)`."""
    tree = ast.parse(source)
    env: dict = {}
    out: list[SizeConstant] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        deps: list[str] = []
        v = _eval(node.value, env, deps)
        for t in node.targets:
            bound: list[tuple[str, object]] = []
            if v is not None and _bind(t, v, bound):
                for name, val in bound:
                    env[name] = val
                    out.append(SizeConstant(name, val, node, sorted(set(deps))))
            else:  # reassigned to something we cannot follow: forget it
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        env.pop(n.id, None)
    return out


def is_protected(name: str) -> bool:
    tokens = {t for t in re.split(r"[_\d]+", name.lower()) if t}
    return bool(tokens & _PROTECTED_TOKENS) or bool(_PROTECTED_NAMES.match(name))


def is_scalable(c: SizeConstant) -> bool:
    if is_protected(c.name) or c.derived:
        return False
    vals = c.value if isinstance(c.value, tuple) else (c.value,)
    return any(v >= MIN_SCALABLE for v in vals)


def _align_for(value: int, fixed: list[int]) -> int:
    pow2 = value & -value
    a = min(pow2, 8)
    for u in fixed:
        if u > 1 and value % u == 0:
            a = a * u // math.gcd(a, u)
    return min(a, value)


def _scale_int(v: int, factor: float, fixed: list[int]) -> int:
    if v < MIN_SCALABLE or factor == 1.0:
        return v
    a = _align_for(v, fixed)
    x = max(a, round(v * factor / a) * a)
    return int(min(v, x) if factor < 1.0 else x)  # factor > 1 grows a task (e.g. to time it above launch cost)


def scale_constants(consts: list[SizeConstant], factor: float) -> dict:
    """New values for every constant at `factor` (1.0 = unchanged). Derived constants are recomputed."""
    fixed = [v for c in consts if not is_scalable(c) and not c.derived
             for v in (c.value if isinstance(c.value, tuple) else (c.value,))]
    env: dict = {}
    for c in consts:
        if c.derived:
            bound: list[tuple[str, object]] = []
            v = _eval(c.node.value, env, [])
            got = None
            if v is not None:
                for t in c.node.targets:
                    if _bind(t, v, bound):
                        got = dict(bound).get(c.name)
            env[c.name] = got if got is not None else c.value
        elif is_scalable(c):
            env[c.name] = (tuple(_scale_int(x, factor, fixed) for x in c.value) if isinstance(c.value, tuple)
                           else _scale_int(c.value, factor, fixed))
        else:
            env[c.name] = c.value
    return env


def _render_target(t: ast.AST) -> str:
    if isinstance(t, ast.Tuple):
        return ", ".join(_render_target(e) for e in t.elts)
    return t.id  # type: ignore[attr-defined]


def _render_value(t: ast.AST, values: dict) -> str:
    if isinstance(t, ast.Tuple):
        return ", ".join(_render_value(e, values) for e in t.elts)
    return repr(values[t.id])  # type: ignore[attr-defined]


def rewrite_source(source: str, values: dict) -> str:
    """The source with module-level constants assigned `values`; every other line is untouched.

    A chained assignment (`height = width = 256`) takes its first target's value."""
    lines = source.splitlines(keepends=True)
    consts = size_constants(source)
    by_node: dict[int, list[SizeConstant]] = {}
    for c in consts:
        by_node.setdefault(id(c.node), []).append(c)
    for group in sorted(by_node.values(), key=lambda g: (g[0].node.lineno, g[0].node.col_offset), reverse=True):
        node = group[0].node
        if all(values.get(c.name, c.value) == c.value for c in group):
            continue
        old = ", ".join(f"{c.name}={c.value!r}" for c in group)
        first = node.targets[0]
        targets = " = ".join(_render_target(t) for t in node.targets)
        new = f"{targets} = {_render_value(first, values)}"
        start, end = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        note = f"  # drk: scaled from {old}"
        if start == end and node.end_col_offset is not None:  # keep `a = 1; b = 2` neighbours intact
            line = lines[start]
            rest = line[node.end_col_offset:]
            code_after = rest.split("#")[0].strip()
            tail = rest.rstrip("\n") if code_after else note
            lines[start] = f"{line[:node.col_offset]}{new}{tail}\n"
        else:
            # one line, and blank ones for the rest, so every later line keeps its number (tracebacks)
            lines[start:end + 1] = [f"{lines[start][:node.col_offset]}{new}{note}\n"] + ["\n"] * (end - start)
    return "".join(lines)


def follow(source: str, original: dict, values: dict) -> str:
    """A candidate's source at its task's scaled sizes: every module-level constant it declares under the name
    of one of the task's, with the task's original value, takes the task's scaled value (a candidate that copied
    `batch_size = 256` from its task reads it where the task does, e.g. for a state built in __init__, and
    must see the size the reference sees). Its other constants (block sizes, its own names) are left alone;
    a source that does not parse is returned as is (its load reports the error)."""
    try:
        consts = size_constants(source)
    except SyntaxError:
        return source
    new = {c.name: values[c.name] for c in consts
           if c.name in values and c.name in original and c.value == original[c.name] and values[c.name] != c.value}
    return rewrite_source(source, new) if new else source


def scale_source(source: str, factor: float) -> ScalePlan:
    consts = size_constants(source)
    values = scale_constants(consts, factor)
    return ScalePlan(factor, values, {c.name: c.value for c in consts}, source=rewrite_source(source, values))


def fit_budget(source: str, budget_bytes: int, measure: Callable[[str], int], max_iter: int = 40) -> ScalePlan:
    """The largest scale whose inputs, as `measure(source)` counts them, fit `budget_bytes`.

    `measure` runs `get_inputs()` of a source (without allocating, e.g. on the meta device) and returns
    the bytes of its tensors. Raises ScalingError when even the smallest scale does not fit.
    """
    full = measure(source)
    plan = scale_source(source, 1.0)
    plan.input_bytes = full
    if full <= budget_bytes:
        return plan
    if not any(is_scalable(c) for c in size_constants(source)):
        raise ScalingError(f"inputs are {full / 2**20:.1f} MB (budget {budget_bytes / 2**20:.1f} MB) and the task "
                           "has no module-level size constants to scale")
    measured: dict[tuple, int] = {}

    def bytes_at(plan: ScalePlan) -> int:
        key = tuple(sorted(plan.constants.items()))
        if key not in measured:
            measured[key] = measure(plan.source)
        plan.input_bytes = measured[key]
        return plan.input_bytes

    best = scale_source(source, 1e-9)
    if bytes_at(best) > budget_bytes:
        raise ScalingError(f"inputs stay at {best.input_bytes / 2**20:.1f} MB at the smallest scale "
                           f"(budget {budget_bytes / 2**20:.1f} MB)")
    lo, hi = 1e-9, 1.0  # lo fits, hi does not; bisect in log space
    for _ in range(max_iter):
        if hi / lo < 1.01:
            break
        mid = math.sqrt(lo * hi)
        cand = scale_source(source, mid)
        if bytes_at(cand) <= budget_bytes:
            best, lo = cand, mid
        else:
            hi = mid
    return best
