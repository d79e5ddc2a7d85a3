"""ptxas for a candidate process that may start no program: one helper process per candidate, made before the
candidate's filter, that runs ptxas and nothing else.

Rule: on CUDA under the exec guard the candidate's seccomp filter refuses `execve`, `fork` and `clone` without
CLONE_THREAD (`drk.gym.sandbox.seccomp`, `no_processes`), so no work moves into a process the evaluation does
not watch and no other program runs, whatever Python the candidate writes. Triton still needs ptxas once per
kernel (`make_cubin`). So before the filter goes on, the candidate process forks this helper (same uid, same
Landlock rules and namespaces); the helper installs a filter that leaves out only the process rules, and
answers requests on a socket pair: ptxas flags and PTX text in, ptxas's exit status, log and cubin out. It runs
the ptxas binaries resolved before any candidate code existed, in a folder of its own that it names as the
input and output; a flag that could name a file is refused.

On the candidate's side, `install` gives Triton's nvidia compiler and knobs a `subprocess` whose `run` and
`check_output` route a ptxas command to the helper and refuse any other program, as the filter would.

This is routing and the filter is the boundary: candidate code can talk to the helper directly, but all it
can get is ptxas run on a PTX of its choosing, which Triton does for it anyway, in a process of its own uid
that the budget counts and the evaluation's end kills.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import types

MAX_PTX = 64 << 20        # PTX of one kernel; far larger is no kernel Triton made
MAX_CUBIN = 256 << 20
MAX_LOG = 1 << 20
MAX_FLAGS = 64
RUN_TIMEOUT_S = 300.0     # one ptxas run on a loaded host
# A ptxas flag as Triton writes them (-lineinfo, -v, --fmad=false, --opt-level, 3, --gpu-name=sm_90a) or as
# PTXAS_OPTIONS / a kernel's ptx_options may add: no path separator, so none can name a file.
FLAG = re.compile(r"[A-Za-z0-9_+=.,-]{1,128}")
# flags whose value names a file, in either spelling ptxas accepts: the helper names input and output itself
FILE_FLAGS = {"-o", "--output-file", "-optf", "--options-file", "-arch-list", "--input-as-string", "-ias"}


class BadRequest(ValueError):
    """A request that is not a ptxas run the helper makes."""


def flags_of(args: list) -> list[str]:
    """The flags of a request, or BadRequest."""
    if not isinstance(args, list) or len(args) > MAX_FLAGS:
        raise BadRequest(f"at most {MAX_FLAGS} flags")
    for a in args:
        if not isinstance(a, str) or not FLAG.fullmatch(a) or a.split("=", 1)[0] in FILE_FLAGS:
            raise BadRequest(f"flag {str(a)[:40]!r} is not one the helper passes to ptxas")
    return list(args)


def resolve_tools() -> list[str]:
    """Absolute paths of the ptxas binaries Triton would run here (resolving them runs each once, so this
    belongs before the candidate's filter); [] without a CUDA backend."""
    tools = []
    try:
        from triton import knobs

        for name in ("ptxas", "ptxas_blackwell"):
            try:
                t = getattr(knobs.nvidia, name)
            except RuntimeError:  # not shipped with this Triton
                continue
            if t is not None and getattr(t, "path", None):
                tools.append(os.path.realpath(t.path))
    except ImportError:
        pass
    return sorted(set(tools))


# ---- the helper ----------------------------------------------------------------------------------------

def start_helper(tools: list[str], install_filter) -> int:
    """Fork the helper; returns the candidate's end of its channel (a descriptor). `install_filter()` runs in
    the helper before it serves (the candidate's filter without the process rules)."""
    import ctypes
    import socket

    from drk.gym.common import wire

    a, b = socket.socketpair()
    mine, its = a.detach(), b.detach()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(mine)
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
            install_filter()
            serve(wire.connection_from_fd(its), tools)
        except BaseException:  # noqa: BLE001  (the candidate sees the channel close: its compile fails)
            code = 3
        os._exit(code)
    os.close(its)
    return mine


def serve(conn, tools: list[str]) -> None:
    """Answer requests until the candidate closes its end: {"op": "run", "tool": i, "flags": [...]} with the
    PTX as one frame, or {"op": "version", "tool": i}."""
    from drk.gym.common import wire

    work = tempfile.mkdtemp(prefix="ptxas-")
    try:
        while True:
            try:
                msg, frames = wire.recv(conn, max_frame=MAX_PTX)
            except (EOFError, wire.ProtocolError, OSError):
                return
            try:
                reply, out = run(msg, frames, tools, work)
            except BadRequest as e:
                reply, out = {"ok": False, "error": str(e)[:300]}, []
            wire.send(conn, reply, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(msg: dict, frames: list[bytes], tools: list[str], work: str) -> tuple[dict, list[bytes]]:
    """One request: (reply, [stdout, log, cubin]); BadRequest for anything but a ptxas run."""
    tool = msg.get("tool")
    if not isinstance(tool, int) or not 0 <= tool < len(tools):
        raise BadRequest("no such tool")
    if msg.get("op") == "version":
        argv = [tools[tool], "--version"]
        src = out = None
    elif msg.get("op") == "run":
        if len(frames) != 1:
            raise BadRequest("a run carries its PTX as one frame")
        src, out = os.path.join(work, "kernel.ptx"), os.path.join(work, "kernel.cubin")
        for p in (src, out):
            if os.path.lexists(p):
                os.unlink(p)
        with open(src, "wb") as f:
            f.write(frames[0])
        argv = [tools[tool], *flags_of(msg.get("flags")), src, "-o", out]
    else:
        raise BadRequest("not a ptxas request")
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT_S, cwd=work)
        rc, stdout, log = p.returncode, p.stdout[-MAX_LOG:], p.stderr[-MAX_LOG:]
    except subprocess.TimeoutExpired:
        rc, stdout, log = -int(signal.SIGKILL), b"", f"ptxas ran past {RUN_TIMEOUT_S:.0f} s".encode()
    cubin = b""
    if out and rc == 0 and os.path.isfile(out) and os.path.getsize(out) <= MAX_CUBIN:
        with open(out, "rb") as f:
            cubin = f.read()
    return {"ok": True, "rc": rc}, [stdout, log, cubin]


# ---- the candidate's side --------------------------------------------------------------------------------

class HelperSubprocess(types.ModuleType):
    """`subprocess` for Triton's compiler modules: ptxas through the helper, every other program refused."""

    def __init__(self, fd: int, tools: list[str], violations: list[str]) -> None:
        super().__init__("subprocess")
        from drk.gym.common import wire

        self._conn = wire.connection_from_fd(fd)
        self._tools, self._violations = list(tools), violations

    def __getattr__(self, name):  # constants and exceptions (what else starts a program, the filter refuses)
        return getattr(subprocess, name)

    def _tool(self, cmd) -> int:
        exe = cmd[0] if isinstance(cmd, (list, tuple)) and cmd else None
        real = os.path.realpath(os.fspath(exe)) if isinstance(exe, (str, bytes, os.PathLike)) else None
        if real in self._tools:
            return self._tools.index(real)
        msg = f"sandbox: starting programs is not allowed in a candidate process ({str(exe)[:80]!r}; ptxas only)"
        if len(self._violations) < 20:
            self._violations.append(msg)
        raise PermissionError(msg)

    def _ask(self, header: dict, frames: list[bytes]) -> tuple[int, bytes, bytes, bytes]:
        from drk.gym.common import wire

        wire.send(self._conn, header, frames)
        try:
            reply, got = wire.recv(self._conn, timeout=RUN_TIMEOUT_S + 30)
        except (TimeoutError, EOFError, wire.ProtocolError) as e:
            raise OSError(f"sandbox: the ptxas helper did not answer ({type(e).__name__})") from None
        if not reply.get("ok") or len(got) != 3:
            raise OSError(f"sandbox: ptxas request refused: {str(reply.get('error'))[:200]}")
        return int(reply.get("rc", 1)), got[0], got[1], got[2]

    def run(self, cmd, *, check: bool = False, stdout=None, stderr=None, capture_output: bool = False, **_kw):
        tool = self._tool(cmd)
        args = [os.fspath(a) for a in cmd[1:]]
        if args == ["--version"]:
            rc, out, log, _ = self._ask({"op": "version", "tool": tool}, [])
        else:
            # Triton's make_cubin: [ptxas, *flags, SRC.ptx, "-o", OUT]; the helper names its own input and output
            if len(args) < 3 or args[-2] != "-o":
                raise PermissionError("sandbox: a ptxas command must end with SRC -o OUT")
            src, dst, flags = args[-3], args[-1], [a for a in args[:-3] if a]  # PTXAS_OPTIONS split on spaces
            with open(src, "rb") as f:
                ptx = f.read(MAX_PTX + 1)
            if len(ptx) > MAX_PTX:
                raise PermissionError(f"sandbox: PTX larger than {MAX_PTX >> 20} MiB")
            rc, out, log, cubin = self._ask({"op": "run", "tool": tool, "flags": flags}, [ptx])
            if rc == 0:
                with open(dst, "wb") as f:
                    f.write(cubin)
        err_out = log
        if stderr == subprocess.STDOUT:
            out, err_out = out + log, b""
        for target, data in ((stdout, out), (stderr, err_out)):
            if hasattr(target, "fileno"):
                os.write(target.fileno(), data)
                if hasattr(target, "flush"):
                    target.flush()
        captured_out = out if (capture_output or stdout == subprocess.PIPE) else None
        captured_err = err_out if (capture_output or stderr == subprocess.PIPE) else None
        if check and rc != 0:
            raise subprocess.CalledProcessError(rc, cmd, captured_out, captured_err)
        return subprocess.CompletedProcess(cmd, rc, captured_out, captured_err)

    def check_output(self, cmd, *, stderr=None, **kw):
        return self.run(cmd, check=True, stdout=subprocess.PIPE, stderr=stderr, **kw).stdout


def install(fd: int, tools: list[str], violations: list[str]) -> HelperSubprocess:
    """Route the Triton compiler's program runs through the helper on `fd` (runs before candidate code)."""
    import triton.knobs as knobs
    from triton.backends.nvidia import compiler

    proxy = HelperSubprocess(fd, tools, violations)
    compiler.subprocess = proxy
    knobs.subprocess = proxy
    return proxy
