"""Triton's native modules in a candidate process under the exec guard: loaded only from read-only folders,
launchers built by the judge (`drk.gym.judge.launchers`).

Installed by the runner before any candidate code exists. Triton's `compile_module_from_src` (the one
place it builds and loads C modules: its driver utilities and one launcher per kernel signature) is
replaced by a lookup, by Triton's own cache key, in the slot's read-only folders (the base cache the judge
warmed, the judge's launcher folder); a launcher not there yet is asked of the judge with the signature
Triton's `make_launcher` was given. Anything else is refused with a clear message.

This is routing, not the boundary: candidate code can reach the original functions, but the compiler's
output would land in a noexec folder and fail in the loader (`drk.gym.sandbox.zygote.guard_exec`).
"""
from __future__ import annotations

import json
import os
import socket

from drk.gym.common.modules import LAUNCHER, cache_key, module_file

REPLY_TIMEOUT_S = 300.0  # a compiler run on a loaded host; the judge answers every request


def _jsonable(t):
    return [_jsonable(x) for x in t] if isinstance(t, (tuple, list)) else t


def _driver_source(driver) -> str | None:
    """The C source of Triton's driver utilities (`driver.c` beside its CUDA driver module), read before any
    candidate code exists; None where this Triton keeps none there."""
    path = os.path.join(os.path.dirname(os.path.realpath(driver.__file__)), "driver.c")
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


class JudgeBuiltModules:
    def __init__(self, sock_fd: int, folders: list[str], violations: list[str]) -> None:
        self.sock = socket.socket(fileno=sock_fd)
        self.sock.settimeout(REPLY_TIMEOUT_S)
        self.folders, self.violations = list(folders), violations
        self.made: dict[str, tuple] = {}  # launcher source -> (signature types, tensordesc metadata)
        self.driver_src: str | None = None

    def install(self) -> None:
        import triton.runtime.build as build
        from triton.backends.nvidia import driver

        make_launcher = driver.make_launcher
        self.driver_src = _driver_source(driver)

        def recording_make_launcher(constants, signature, tensordesc_meta):
            src = make_launcher(constants, signature, tensordesc_meta)
            self.made[src] = (list(signature.values()), tensordesc_meta)
            return src

        def compile_module_from_src(src, name, library_dirs=None, include_dirs=None, libraries=None, ccflags=None):
            return self.load(src, name, build._load_module_from_path)

        driver.make_launcher = recording_make_launcher
        driver.compile_module_from_src = compile_module_from_src
        build.compile_module_from_src = compile_module_from_src

    def find(self, src: str, name: str) -> str | None:
        key = cache_key(src)
        for folder in self.folders:
            path = os.path.join(folder, key, module_file(name))
            if os.path.isfile(path):
                return path
        return None

    def load(self, src: str, name: str, load_path):
        path = self.find(src, name)
        if path is None and name == LAUNCHER and src in self.made:
            sig, meta = self.made[src]
            self.sock.send(json.dumps({"signature": _jsonable(sig), "tensordesc": None if meta is None else [
                m is not None for m in meta]}).encode())
            reply = json.loads(self.sock.recv(65536) or b"{}")
            if not reply.get("ok"):
                raise RuntimeError(reply.get("error") or "the judge did not build the launcher")
            path = os.path.join(self.folders[-1], reply["key"], module_file(name))
        if path is None and src == self.driver_src:
            # Triton's own driver utilities, which the judge built into the base cache: missing is the
            # evaluator's failure (the start fails, `infra_error`), never the candidate's
            raise RuntimeError(f"Triton's driver utilities ({name}) are not in the evaluator's base cache: "
                               + self.looked_for(src, name))
        if path is None:
            msg = (f"sandbox: building native module {name!r} is not allowed (only Triton's kernel launchers, "
                   "which the evaluator builds)")
            if len(self.violations) < 20:
                self.violations.append(msg)
            raise PermissionError(msg)
        return load_path(name, path)

    def looked_for(self, src: str, name: str) -> str:
        """Where the lookup looked and what it found there, for the operator."""
        key, seen = cache_key(src), []
        for folder in self.folders:
            state = ("no folder" if not os.path.isdir(folder)
                     else "unreadable" if not os.access(folder, os.R_OK | os.X_OK)
                     else "no such key" if not os.path.isdir(os.path.join(folder, key)) else "no module file")
            seen.append(f"{folder}: {state}")
        return f"key {key}, file {module_file(name)}; " + "; ".join(seen)
