"""Static checks: zero false positives on ordinary kernel code, and each forbidden pattern caught.

    .venv/bin/python -m pytest tests/test_static.py -q
"""
from __future__ import annotations

import pytest
from conftest import ROOT

from drk.gym.judge.static import check_source

HEADER = "import torch\nimport triton\nimport triton.language as tl\n"
MODEL = "\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def all_own_kernels():
    return sorted((ROOT / "data").rglob("*solutions*/**/*.py")) + sorted((ROOT / "data" / "query_solutions").glob("*.py"))


@pytest.mark.parametrize("path", all_own_kernels(), ids=lambda p: p.stem)
def test_no_false_positive_on_own_kernels(path):
    rep = check_source(path.read_text())
    assert rep.ok, f"{path}: {rep.error}"


def test_ordinary_patterns_pass():
    src = HEADER + """import math, functools, itertools
from typing import Optional
from dataclasses import dataclass
import os
THREADS = int(os.environ.get("X", "4"))

@dataclass
class Cfg:
    block: int = 128

@functools.lru_cache(None)
def pick(n): return max(16, triton.next_power_of_2(n))

class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = Cfg()
        for m in self.modules():
            pass
    def forward(self, x):
        return getattr(self, "cfg") and x
"""
    assert check_source(src).ok


@pytest.mark.parametrize("snippet,verdict,needle", [
    ("import subprocess", "forbidden", "subprocess"),
    ("from socket import socket", "forbidden", "socket"),
    ("import ctypes", "forbidden", "ctypes"),
    ("import threading", "forbidden", "threading"),
    ("from concurrent.futures import ThreadPoolExecutor", "forbidden", "concurrent"),
    ("import gc", "forbidden", "gc"),
    ("import inspect", "forbidden", "inspect"),
    ("import sys\nsys.modules['torch'] = None", "forbidden", "sys"),
    ("import os\nos.system('ls')", "forbidden", "os.system"),
    ("import os as o\no.execv('/bin/sh', [])", "forbidden", "os.execv"),
    ("from os import fork", "forbidden", "os.fork"),
    ("torch.allclose = lambda *a, **k: True", "forbidden", "monkeypatching"),
    ("import time\ntime.perf_counter = lambda: 0.0", "forbidden", "monkeypatching"),
    ("setattr(torch.cuda, 'synchronize', None)", "forbidden", "monkeypatching"),
    ("import torch as T\nT.cuda.Event.elapsed_time = None", "forbidden", "monkeypatching"),
    ("x = eval('1')", "forbidden", "eval"),
    ("exec('y = 1')", "forbidden", "exec"),
    ("__import__('os')", "forbidden", "__import__"),
    ("open('/tmp/x', 'w')", "forbidden", "open"),
    ("f = (lambda: 0).__globals__", "forbidden", "__globals__"),
    ("k = object.__subclasses__()", "forbidden", "__subclasses__"),
    ("import os\nw = getattr(os, 'sys' + 'tem')", "forbidden", "computed name"),
    ("y = torch.compile(lambda x: x)", "forbidden", "torch.compile"),
    ("s = torch.cuda.Stream()", "forbidden", "side streams"),
    ("from torch.utils.cpp_extension import load_inline", "forbidden", "native code"),
])
def test_forbidden_patterns(snippet, verdict, needle):
    rep = check_source(HEADER + snippet + MODEL)
    assert rep.verdict == verdict and needle in rep.error, rep.error


def test_validation_messages():
    assert check_source("def f(:\n").verdict == "compile_error"
    assert "ModelNew" in check_source(HEADER + "x = 1\n").error
    rep = check_source("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    assert rep.verdict == "no_triton" and "import triton" in rep.error


@pytest.mark.parametrize("line", ["torch.backends.cuda.matmul.allow_tf32 = True",
                                  "torch.set_float32_matmul_precision('medium')",
                                  "import torch.backends.cudnn as cb\ncb.allow_tf32 = False"])
def test_numeric_settings_are_the_evaluators(line):
    rep = check_source(HEADER + line + "\nclass ModelNew(torch.nn.Module):\n    pass\n")
    assert rep.verdict == "forbidden"


def test_triton_kernel_names_come_from_the_source_and_vendor_names_are_refused():
    from drk.gym.judge.static import triton_kernel_names

    src = HEADER + """from triton import jit
@triton.jit
def add_kernel(x): pass
@jit
def mul_kernel(x): pass
@triton.autotune(configs=[], key=[])
@triton.jit
def tuned_kernel(x): pass
def helper(): pass
def plain(x): pass
wrapped = triton.jit(plain)
class ModelNew(torch.nn.Module):
    pass
"""
    assert triton_kernel_names(src) == {"add_kernel", "mul_kernel", "tuned_kernel", "plain"}
    assert check_source(src).ok
    bad = src.replace("def add_kernel", "def sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize64x64x32")
    assert check_source(bad).verdict == "forbidden"


def _jit(name: str) -> str:
    return HEADER + f"\n@triton.jit\ndef {name}(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n" + MODEL


@pytest.mark.parametrize("name", ["elementwise_kernel", "reduce_kernel_rows", "vectorized_elementwise_add",
                                  "triton_per_row_lse_minus_mean", "triton_red_sum_rows", "at_least_one_kernel",
                                  "voidfill_kernel", "matmul_kernel"])
def test_ordinary_kernel_names_pass(name):
    """Names a kernel engineer gives: a black-box false-reject hunt found correct kernels named
    `elementwise_kernel` or `triton_per_row_...` refused. Coverage matches the profiler's rows by exact name, and
    ATen's CUDA kernels appear there as demangled signatures ("void at::native::elementwise_kernel<...>(...)"),
    which no Python name equals; only vendor kernels with plain C names and Inductor's generated ones can."""
    rep = check_source(_jit(name))
    assert rep.ok, rep.error


@pytest.mark.parametrize("name", ["ampere_sgemm_128x64_nn", "sm90_xmma_gemm_f32f32", "cutlass_80_simt_sgemm",
                                  "cublasLt_split_k", "triton_poi_fused_add_0", "triton_per_fused__softmax_1",
                                  "triton_red_fused_sum_2", "triton_tem_fused_mm_3"])
def test_a_kernel_named_like_a_library_or_generated_kernel_is_refused(name):
    rep = check_source(_jit(name))
    assert rep.verdict == "forbidden" and "imitates" in rep.error, (rep.verdict, rep.error)


SELF_TEST = """
if __name__ == "__main__":
    import sys
    from triton.testing import do_bench
    x = torch.randn(4096, device="cuda")
    torch.cuda.synchronize()
    print(do_bench(lambda: ModelNew()(x)), file=sys.stderr)
"""


def test_a_self_test_under_a_main_guard_is_not_checked():
    """An `if __name__ == "__main__":` block never runs when the evaluator imports the file (its module has
    another name), and LLM-written kernel files often end with one that times the kernel: correct kernels
    were refused for its `torch.cuda.synchronize` or `import sys` (a black-box false-reject hunt)."""
    rep = check_source(HEADER + MODEL + SELF_TEST)
    assert rep.ok, rep.error
    logged = HEADER + "import logging\nlog = logging.getLogger(__name__)\n" + MODEL + SELF_TEST
    assert check_source(logged).ok  # reading its own name is no renaming


@pytest.mark.parametrize("rename", ['__name__ = "__main__"\n', 'globals()["__name__"] = "__main__"\n',
                                    'def f():\n    global __name__\n    __name__ = "__main__"\nf()\n'])
def test_a_file_that_renames_itself_has_its_main_block_checked(rename):
    rep = check_source(HEADER + MODEL + rename + SELF_TEST)
    assert rep.verdict == "forbidden", (rep.verdict, rep.error)
