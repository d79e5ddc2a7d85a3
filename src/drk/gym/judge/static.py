"""Static checks on candidate source, before anything runs.

Two jobs:
1. Validation with feedback a model can act on: the source parses, defines `ModelNew`, imports Triton.
2. Rejection of code that has no business in a kernel file (verdict `forbidden`, reason as feedback):
   process/thread/network/native-code modules, frame and garbage-collector introspection, dynamic code
   (`eval`, `exec`, `__import__`), file I/O, writes to `sys.modules`, and monkeypatching of torch, Triton,
   time or other modules (assignment or `setattr`).

This is a first, cheap layer with clear messages, not the boundary: obfuscated code can evade any static
rule, so candidate code runs only in an OS sandbox (`drk.gym.sandbox.isolation`) and the verdict never depends on
the candidate's own reports. The rules aim at zero false positives on ordinary kernel code: `math`,
`functools`, `itertools`, `typing`, `dataclasses`, helper classes and `@triton.autotune`/`heuristics`
pass; numeric settings (`torch.backends.*` flags, float32 matmul
precision) are the evaluator's, pinned for reference and candidate alike.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

# Modules a kernel file must not import (any submodule too).
FORBIDDEN_MODULES = {
    "subprocess": "spawns processes", "socket": "opens network connections", "ssl": "network",
    "http": "network", "urllib": "network", "requests": "network", "httpx": "network", "asyncio": "event loops",
    "ctypes": "loads native code", "cffi": "loads native code", "_ctypes": "loads native code",
    "threading": "starts threads", "_thread": "starts threads", "multiprocessing": "starts processes",
    "concurrent": "starts threads", "signal": "signal handlers", "pty": "spawns processes",
    "gc": "inspects the garbage collector", "inspect": "frame introspection", "importlib": "dynamic imports",
    "pickle": "arbitrary object loading", "marshal": "code objects", "shutil": "file system access",
    "tempfile": "file system access", "pathlib": "file system access", "glob": "file system access",
    "builtins": "patches builtins", "sys": "interpreter internals", "code": "dynamic code", "codeop": "dynamic code",
    "runpy": "dynamic code", "atexit": "exit hooks", "resource": "resource limits", "mmap": "raw memory",
    "fcntl": "file descriptors", "posix": "OS calls", "pdb": "debugger", "trace": "tracing", "faulthandler": "signals",
    "torch.utils.cpp_extension": "compiles native code", "torch._dynamo": "torch.compile internals",
    "torch._inductor": "torch.compile internals", "triton.runtime.build": "compiles native code",
    "triton.testing": "timing helpers", "triton.backends": "compiler internals", "numba": "another kernel compiler",
    "cupy": "another kernel library", "pycuda": "another kernel library", "cuda": "CUDA driver bindings",
}
# Calls to these names (builtins) are forbidden.
FORBIDDEN_CALLS = {
    "eval": "dynamic code", "exec": "dynamic code", "compile": "dynamic code", "__import__": "dynamic imports",
    "globals": "module globals access", "vars": "namespace access", "breakpoint": "debugger",
    "open": "file I/O", "input": "reads stdin", "exit": "exits the process", "quit": "exits the process",
}
# os.* functions that are forbidden (os itself may be imported, e.g. for os.environ reads).
FORBIDDEN_OS = {
    "system", "popen", "fork", "forkpty", "kill", "killpg", "_exit", "abort", "execv", "execve", "execl", "execle",
    "execlp", "execlpe", "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe",
    "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "write", "writev", "pwrite", "dup", "dup2", "fdopen",
    "open", "openpty", "remove", "unlink", "rmdir", "rename", "replace", "chmod", "chown", "symlink", "link",
    "putenv", "unsetenv", "setsid", "setpgid", "chdir", "truncate", "ftruncate", "mkfifo", "memfd_create",
}
# Attribute names whose use means frame walking, code patching or introspection escapes.
FORBIDDEN_ATTRS = {
    "_getframe", "f_back", "f_globals", "f_locals", "f_builtins", "gi_frame", "cr_frame", "tb_frame", "tb_next",
    "__subclasses__", "__globals__", "__code__", "__builtins__", "__closure__", "__loader__", "__spec__",
    "get_referrers", "get_referents", "get_objects", "setprofile", "settrace", "addaudithook",
    "__reduce__", "__reduce_ex__", "_current_frames", "co_code", "__import__",
}
# Module roots whose attributes must not be assigned (monkeypatching). torch.backends.* flags are allowed.
PATCH_PROTECTED = {"torch", "triton", "time", "math", "numpy", "os", "sys", "builtins", "random", "functools",
                   "operator", "drk", "gc", "inspect"}
# Numeric settings are pinned by the evaluator for reference and candidate alike (a TF32 matmul against an
# fp32 reference is a free "speedup"), so torch.backends.* flags are not the candidate's to set either.
ALLOWED_ASSIGN_PREFIXES: tuple[str, ...] = ()
# A @triton.jit function named like a library's kernel could claim that kernel's profiled time as its own
# (coverage matches profiler rows by exact name; `checks.own_executions` also caps what a name counts at the
# launches through Triton's path): names that a profiler row can carry are refused, those of vendor kernels with
# plain C names (cuBLAS, CUTLASS, cuDNN) and of Inductor's generated Triton kernels (triton_poi_fused_add_0).
# ATen's kernels show as demangled signatures ("void at::native::elementwise_kernel<...>(...)"), which no Python
# name equals, so names like `elementwise_kernel` stay a kernel engineer's to use.
VENDOR_KERNEL_NAME = re.compile(r"^(sm\d+_|ampere_|volta_|turing_|hopper_|cutlass|cublas|cudnn|"
                                r"triton_(poi|red|per|tem)_(fused\w*_)?\d+$)", re.I)
# Calls that produce kernels we do not count as the candidate's own Triton.
FORBIDDEN_QUALIFIED_CALLS = {
    "torch.compile": "torch.compile generates the kernels; write the Triton kernels yourself",
    "torch.cuda.synchronize": "the evaluator does the synchronisation; remove torch.cuda.synchronize",
    "torch.cuda.Event": "timing is the evaluator's job; remove torch.cuda.Event",
    "torch.cuda.Stream": "side streams escape the evaluator's timing; use the current stream",
    "torch.cuda.stream": "side streams escape the evaluator's timing; use the current stream",
    "torch.ops.load_library": "loads native code",
    "torch.library.Library": "registers operators",
    "torch.load": "loads pickled objects",
    "torch.save": "writes files",
    "torch.set_default_device": "changes global torch state",
    "torch.set_default_dtype": "changes global torch state",
    "torch.set_float32_matmul_precision": "the evaluator pins numeric settings for reference and candidate",
    "torch.use_deterministic_algorithms": "the evaluator pins numeric settings for reference and candidate",
}


@dataclass
class StaticReport:
    """`verdict` is "" when the source may run; otherwise compile_error / no_triton / forbidden + a reason."""

    verdict: str = ""
    error: str = ""
    line: int | None = None

    @property
    def ok(self) -> bool:
        return not self.verdict


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _module_blocked(name: str) -> str | None:
    for mod, why in FORBIDDEN_MODULES.items():
        if name == mod or name.startswith(mod + "."):
            return f"import of {name} ({why}) is not allowed in a kernel file"
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # local name -> fully qualified module/object
        self.problem: tuple[str, int] | None = None

    def fail(self, msg: str, node: ast.AST) -> None:
        if self.problem is None:
            self.problem = (msg, getattr(node, "lineno", 0))

    def qualify(self, node: ast.AST) -> str | None:
        d = _dotted(node)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        base = self.aliases.get(head, head)
        return f"{base}.{rest}" if rest else base

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if why := _module_blocked(a.name):
                self.fail(why, node)
            self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level:
            self.fail("relative imports are not allowed in a kernel file", node)
        if why := _module_blocked(mod):
            self.fail(why, node)
        for a in node.names:
            full = f"{mod}.{a.name}"
            if why := _module_blocked(full):
                self.fail(why, node)
            if mod == "os" and a.name in FORBIDDEN_OS:
                self.fail(f"os.{a.name} is not allowed in a kernel file", node)
            if a.name == "*":
                self.fail(f"`from {mod} import *` is not allowed in a kernel file", node)
            self.aliases[a.asname or a.name] = full

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in FORBIDDEN_ATTRS:
            self.fail(f"access to `.{node.attr}` (introspection or interpreter internals) is not allowed", node)
        q = self.qualify(node)
        if q and q.startswith("os.") and q.split(".")[1] in FORBIDDEN_OS:
            self.fail(f"{q} is not allowed in a kernel file", node)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("__builtins__", "__loader__", "__spec__"):
            self.fail(f"access to {node.id} is not allowed", node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Name) and f.id in FORBIDDEN_CALLS and f.id not in self.aliases:
            self.fail(f"{f.id}() ({FORBIDDEN_CALLS[f.id]}) is not allowed in a kernel file", node)
        q = self.qualify(f)
        if q in FORBIDDEN_QUALIFIED_CALLS:
            self.fail(f"{q}: {FORBIDDEN_QUALIFIED_CALLS[q]}", node)
        if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args:
            target = self.qualify(node.args[0])
            if target and target.split(".")[0] in PATCH_PROTECTED and not target.startswith(ALLOWED_ASSIGN_PREFIXES):
                self.fail(f"{f.id}() on {target} (monkeypatching) is not allowed", node)
        if isinstance(f, ast.Name) and f.id == "getattr" and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                if name.value in FORBIDDEN_ATTRS:
                    self.fail(f"getattr(..., {name.value!r}) is not allowed", node)
                target = self.qualify(node.args[0])
                if target == "os" and name.value in FORBIDDEN_OS:
                    self.fail(f"os.{name.value} is not allowed in a kernel file", node)
            else:
                target = self.qualify(node.args[0])
                if target and target.split(".")[0] in PATCH_PROTECTED | {"os"}:
                    self.fail(f"getattr on {target} with a computed name is not allowed", node)
        self.generic_visit(node)

    def _check_target(self, t: ast.AST, node: ast.AST) -> None:
        if isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self._check_target(e, node)
            return
        if isinstance(t, ast.Subscript):
            q = self.qualify(t.value)
            if q and q.endswith("modules") and q.startswith("sys"):
                self.fail("writing to sys.modules is not allowed", node)
            return
        if isinstance(t, ast.Attribute):
            q = self.qualify(t)
            if q and q.split(".")[0] in PATCH_PROTECTED and not q.startswith(ALLOWED_ASSIGN_PREFIXES):
                self.fail(f"assigning {q} (monkeypatching) is not allowed", node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_target(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._check_target(t, node)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.generic_visit(node)


def _is_jit(dec: ast.AST) -> bool:
    node = dec.func if isinstance(dec, ast.Call) else dec
    d = _dotted(node) or ""
    return d.split(".")[-1] == "jit"


def triton_kernel_names(source: str) -> set[str]:
    """Names of the functions the source declares with `@triton.jit` (however imported): the only names
    whose profiled device time counts as the candidate's own Triton work. Parsed here, in the judge, so
    the candidate's process cannot add to the set."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    names = {n.name for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(_is_jit(d) for d in n.decorator_list)}
    # `k = triton.jit(fn)`: Triton names the kernel after fn
    names |= {n.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_jit(n.func) and n.args
              and isinstance(n.args[0], ast.Name)}
    return names


def rules_enabled() -> bool:
    """False when the evaluator's environment says DRK_STATIC_RULES=off: an operator's switch for red-team
    runs (never a request option) that skips this layer's refusals, so an attack suite shows what the OS
    sandbox and the judge's evidence catch on their own. Results then record it in `protocol`."""
    return os.environ.get("DRK_STATIC_RULES", "on") != "off"


def _is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either side)."""
    t = getattr(node, "test", None)
    if not (isinstance(node, ast.If) and isinstance(t, ast.Compare) and len(t.ops) == 1
            and isinstance(t.ops[0], ast.Eq)):
        return False
    sides = [t.left, t.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


def _without_main_blocks(tree: ast.Module) -> ast.Module:
    """The module less its top-level `if __name__ == "__main__":` blocks, which never run when the evaluator
    imports it under another name (kernel files often end with a self-test that times the kernel); the whole
    module when it might rename itself (assigns `__name__`, declares it global, or spells it as a string).
    An early layer's convenience: nothing rests on it."""
    guards = [n for n in tree.body if _is_main_guard(n)]
    renamed = any((isinstance(n, ast.Name) and n.id == "__name__" and not isinstance(n.ctx, ast.Load))
                  or (isinstance(n, ast.Constant) and n.value == "__name__")
                  or (isinstance(n, ast.Global) and "__name__" in n.names) for n in ast.walk(tree))
    if not guards or renamed:
        return tree
    return ast.Module(body=[n for n in tree.body if not _is_main_guard(n)], type_ignores=[])


def check_source(source: str, rules: bool | None = None) -> StaticReport:
    """Validate a candidate; returns the first problem found (or an ok report). Without `rules`
    (`rules_enabled()` by default) the early layer's refusals (verdict `forbidden` for what the checker
    flags) are skipped; the validation and the kernel-name rule (coverage matches profiler rows by name)
    stay."""
    rules = rules_enabled() if rules is None else rules
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        line = (e.text or "").strip()
        return StaticReport("compile_error", f"SyntaxError: {e.msg} (line {e.lineno}: {line[:120]})", e.lineno)
    except (ValueError, MemoryError, RecursionError) as e:
        return StaticReport("compile_error", f"cannot parse source: {type(e).__name__}: {e}")
    checker = _Checker()
    checker.visit(_without_main_blocks(tree))
    if checker.problem and rules:
        msg, line = checker.problem
        return StaticReport("forbidden", f"{msg} (line {line})", line)
    defines = any(
        (isinstance(n, ast.ClassDef) and n.name == "ModelNew")
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in n.targets))
        or (isinstance(n, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == "ModelNew" for a in n.names))
        for n in tree.body)
    if not defines:
        return StaticReport("compile_error", "the code does not define `class ModelNew(nn.Module)` at module level")
    imports_triton = any(
        (isinstance(n, ast.Import) and any(a.name == "triton" or a.name.startswith("triton.") for a in n.names))
        or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "triton")
        for n in ast.walk(tree))
    if not imports_triton:
        return StaticReport("no_triton", "the code does not import triton; the forward must run Triton kernels")
    for name in sorted(triton_kernel_names(source)):
        if VENDOR_KERNEL_NAME.match(name):
            return StaticReport("forbidden", f"the Triton kernel name {name!r} imitates a library kernel's name; "
                                             "rename it")
    return StaticReport()
