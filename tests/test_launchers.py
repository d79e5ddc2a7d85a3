"""Triton's launchers under the exec guard on CUDA: built by the judge from a signature, never from source a
candidate sends, and loaded by the candidate process only from the judge's read-only folders.

The judge's builder and the candidate's lookup run here on CPU (the launcher is compiled against a stub
driver library, since this host has no CUDA driver); the end-to-end run needs a GPU and is skipped without.

    .venv/bin/python -m pytest tests/test_launchers.py -q
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sysconfig

import pytest
import torch
from conftest import ROOT

from drk.gym.common.modules import LAUNCHER, cache_key, module_file
from drk.gym.judge import launchers
from drk.gym.judge.launchers import BadSignature, LauncherBuilder
from drk.gym.sandbox.launchers import JudgeBuiltModules

SIGNATURE = {"x_ptr": "*fp32", "b_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32", "hidden": "i32", "scale": "fp32",
             "BLOCK": "constexpr", "pair": ("*fp16", "i64")}


def _can_compile() -> str:
    if not shutil.which(os.environ.get("CC") or "gcc"):
        return "no C compiler"
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        return "no Python headers"
    return ""


@pytest.fixture
def stub_driver(tmp_path, monkeypatch):
    """A libcuda.so.1 with no symbols, for linking only (the judge links its launchers against the driver)."""
    why = _can_compile()
    if why:
        pytest.skip(why)
    d = tmp_path / "stub"
    d.mkdir()
    (d / "s.c").write_text("int drk_stub_driver;\n")
    subprocess.run([shutil.which(os.environ.get("CC") or "gcc"), "-shared", "-fPIC", "-o", str(d / "libcuda.so.1"),
                    str(d / "s.c")], check=True)
    from triton import knobs
    from triton.backends.nvidia import driver

    monkeypatch.setattr(knobs.nvidia, "libcuda_path", str(d))
    driver.libcuda_dirs.cache_clear()
    driver.library_dirs.cache_clear()
    yield d
    driver.libcuda_dirs.cache_clear()
    driver.library_dirs.cache_clear()


@pytest.mark.parametrize("sig", [
    "not a list",
    ['i32; system("id")'],
    ["*fp32", "i32)\n#include </etc/shadow>"],
    ["/*", "*/"],
    [1, 2],
    [[[[[[["i32"]]]]]]],
    ["i32"] * (launchers.MAX_ARGS + 1),
])
def test_anything_but_a_signature_is_refused_before_any_source_exists(sig):
    """The request names types; a name that could form C (quotes, semicolons, parentheses, braces, slashes,
    hashes, line breaks), a non-name, nesting deeper than Triton's tuples or an oversized list is refused
    by the parser, before the generator or the compiler sees it."""
    with pytest.raises(BadSignature):
        launchers.parse({"signature": sig, "tensordesc": None})
    assert not LauncherBuilder.build(LauncherBuilder.__new__(LauncherBuilder), {"signature": sig})["ok"]


def test_the_judges_launcher_has_the_key_the_candidates_triton_looks_up(tmp_path, stub_driver):
    """The judge generates the source itself from the type names alone; the module lands where the candidate
    process's lookup (Triton's own cache key of the source its make_launcher produced, with the kernel's real
    constants) finds it, readable and whole."""
    from triton.backends.nvidia import driver

    b = LauncherBuilder(str(tmp_path / "launchers"))
    reply = b.build({"signature": [list(t) if isinstance(t, tuple) else t for t in SIGNATURE.values()],
                     "tensordesc": None})
    assert reply["ok"], reply
    theirs = driver.make_launcher({(6,): 1024}, dict(SIGNATURE), None)
    assert reply["key"] == cache_key(theirs)
    path = b.path(reply["key"])
    assert os.path.isfile(path) and os.stat(path).st_mode & 0o777 == 0o644
    assert [p for p in os.listdir(b.folder) if p.startswith(".build-")] == []  # no half-built leftovers


def test_the_lookup_names_the_folder_tritons_own_cache_writes(tmp_path, monkeypatch):
    """The driver utilities in the base cache were put there by Triton itself (the judge's warm-up kernel):
    the candidate's lookup must name the folder Triton's cache manager uses for that source, or a guarded
    CUDA candidate finds no utilities and cannot start (seen on the H100: every candidate `infra_error`)."""
    import hashlib

    from triton.runtime import cache
    from triton.runtime.build import platform_key

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    src = "/* any module source */"
    manager = cache.get_cache_manager(hashlib.sha256((src + platform_key()).encode("utf-8")).hexdigest())
    assert manager.cache_dir == str(tmp_path / cache_key(src))


def test_a_candidate_gets_judge_built_launchers_and_nothing_else(tmp_path, stub_driver, monkeypatch):
    """The candidate side, installed before candidate code: Triton's driver utilities come from the base cache
    the judge warmed, a new launcher is asked of the judge over the channel and loaded from the judge's
    folder, and any other native module (a16's compile_module_from_src of its own C) is refused with a
    violation the judge turns into `forbidden`."""
    import triton.runtime.build as build
    from triton.backends.nvidia import driver

    for mod, name in ((build, "compile_module_from_src"), (driver, "compile_module_from_src"),
                      (driver, "make_launcher")):
        monkeypatch.setattr(mod, name, getattr(mod, name))  # restored after the test
    loaded = []
    monkeypatch.setattr(build, "_load_module_from_path", lambda name, path: loaded.append((name, path)) or path)

    base = tmp_path / "base"
    with open(os.path.join(driver.dirname, "driver.c")) as f:
        utils_src = f.read()
    utils = base / cache_key(utils_src) / module_file("cuda_utils")
    utils.parent.mkdir(parents=True)
    utils.write_bytes(b"judge-built utilities")
    builder = LauncherBuilder(str(tmp_path / "launchers"))
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    channel = builder.serve(mine)
    violations: list = []
    JudgeBuiltModules(os.dup(theirs.fileno()), [str(base), builder.folder], violations).install()
    theirs.close()

    assert build.compile_module_from_src(utils_src, "cuda_utils") == str(utils)
    src = driver.make_launcher({}, dict(SIGNATURE), None)
    path = driver.compile_module_from_src(src, LAUNCHER)
    assert path == builder.path(cache_key(src)) and os.path.isfile(path)
    with pytest.raises(PermissionError, match="native module"):
        build.compile_module_from_src("#include <stdio.h>\nint x;\n", "drk_redteam_a16")
    with pytest.raises(PermissionError):  # a launcher source Triton's generator never produced here
        build.compile_module_from_src(src + "\n/* extra */\n", LAUNCHER)
    assert len(violations) == 2 and all("native module" in v for v in violations)
    assert [n for n, _ in loaded] == ["cuda_utils", LAUNCHER] and not channel.infra_error
    # the judge's own utilities missing from the base cache is the evaluator's failure, said with where it looked
    utils.unlink()
    with pytest.raises(RuntimeError, match="driver utilities .*not in the evaluator's base cache.*no module file"):
        build.compile_module_from_src(utils_src, "cuda_utils")
    assert len(violations) == 2


def test_the_judges_tool_chain_failing_is_its_failure_not_the_candidates(tmp_path, stub_driver, monkeypatch):
    """A compiler the judge cannot run is an infrastructure failure: the channel says so, and the judge then
    reports `infra_error` instead of the candidate's runtime_error."""
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    builder = LauncherBuilder(str(tmp_path / "launchers"))
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    channel = builder.serve(mine)
    theirs.send(b'{"signature": ["*fp32", "i32"], "tensordesc": null}')
    reply = theirs.recv(65536)
    theirs.close()
    channel.thread.join(10)
    assert b'"ok": false' in reply and b"could not build" in reply
    assert "could not build" in channel.infra_error


def test_a_candidate_asking_for_too_many_builds_is_told_no(tmp_path, stub_driver, monkeypatch):
    """Each build costs the judge a compiler run: past MAX_BUILDS in one evaluation the builder refuses, and
    junk on the channel gets an error reply, not a crash of the judge's thread."""
    monkeypatch.setattr(launchers, "MAX_BUILDS", 2)
    builder = LauncherBuilder(str(tmp_path / "launchers"))
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    channel = builder.serve(mine)
    replies = []
    for msg in (b"\xff not json", b'{"signature": ["i32"]}', b'{"signature": ["i64"]}', b'{"signature": ["i8"]}'):
        theirs.send(msg)
        replies.append(theirs.recv(65536))
    theirs.close()
    channel.thread.join(10)
    assert b"not a launcher request" in replies[0]
    assert b'"ok": true' in replies[1] and b"more than 2" in replies[3]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_correct_kernels_run_and_a16_is_refused_under_the_exec_guard(tmp_path, monkeypatch):
    """End to end on CUDA with the exec guard as it is by default: a correct kernel is `ok` with its launcher
    built by the judge, and a16 (its own C through Triton's build helper) is `forbidden`, the audit hook and
    static rules off so the guard and the lookup stand alone."""
    from drk.gym import EvalOptions, EvalRequest, LocalPool
    from drk.tasks import task_from_file

    monkeypatch.delenv("DRK_EXEC_GUARD", raising=False)
    monkeypatch.setenv("DRK_AUDIT", "off")
    monkeypatch.setenv("DRK_STATIC_RULES", "off")
    task = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
    good = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
    a16 = (ROOT / "tests/attacks/a16_native_triton_build.py").read_text()
    with LocalPool(device="cuda", workers=1, cache_dir=str(tmp_path)) as pool:
        ok, bad = pool.evaluate_batch([EvalRequest(task, good, EvalOptions(device="cuda")),
                                       EvalRequest(task, a16, EvalOptions(device="cuda"))])
    assert ok.verdict == "ok", (ok.verdict, ok.error)
    assert "exec guard" not in ok.versions["sandbox"]
    assert bad.verdict == "forbidden" and "native module" in bad.error, (bad.verdict, bad.error)
