"""The candidate process's early layer: its scrubbed environment and an audit-hook policy with clear messages.

This is not the boundary. Candidate code runs in a process of its own inside the OS sandbox
(`drk.gym.sandbox.isolation`, `drk.gym.sandbox.zygote`), and the judge trusts nothing this process reports beyond what it
checks itself. What this layer adds is a clear, early `forbidden` with a reason a model can act on:

- the environment every worker starts with: an allow-list of variables (paths, CUDA/Triton settings,
  thread counts); nothing named like a key, token, secret or password ever passes, and such values are
  redacted from any text a worker sends back;
- a Python audit hook, installed before candidate code is imported, that refuses starting processes
  (except the compiler binaries Triton itself runs), sockets, writing outside the work folder and the
  Triton cache, reading outside the Python installation and system folders, raw file descriptors,
  native libraries from temporary folders, signalling other processes, and changing attributes of torch /
  Triton / drk / builtin classes. A refused action raises PermissionError("sandbox: ...") inside the
  candidate, and the verdict is `forbidden` with that reason even if the candidate catches it.

Code that reads around the hook (constructed names, library callbacks, native calls) meets the OS
sandbox instead: the action fails there, whatever this layer saw.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)
_ENV_ALLOW = re.compile(
    r"^(PATH|LANG|LC_[A-Z]+|TZ|CUDA_[A-Z_]+|NVIDIA_[A-Z_]+|LD_LIBRARY_PATH|TRITON_[A-Z_]+|OMP_NUM_THREADS|"
    r"MKL_NUM_THREADS|OPENBLAS_NUM_THREADS|PYTORCH_[A-Z_]+|NCCL_[A-Z_]+|TORCH_SYMM_MEM_DISABLE_MULTICAST|"
    r"NVSHMEM_DISABLE_NVLS|CC|CXX|PYTHONHASHSEED|TORCHINDUCTOR_[A-Z_]+|DRK_AUDIT|" + "|".join(
        ("DRK_BWRAP", "DRK_STATIC_RULES", "DRK_EXEC_GUARD", "DRK_PROFILER", "DRK_GPU_LOCK", "DRK_LOCK_DIR",
         "DRK_GPU_MEMORY_SHARE")) + ")$")
# The operator's switches the judge reads (its environment is scrubbed too, so each must be allowed above to
# reach it at all); the judge takes them out of the candidate's environment, which has no use for them.
# DRK_AUDIT stays: the candidate process's runner reads it before any candidate code exists.
JUDGE_ONLY = ("DRK_BWRAP", "DRK_STATIC_RULES", "DRK_EXEC_GUARD", "DRK_PROFILER", "DRK_GPU_LOCK", "DRK_LOCK_DIR",
              "DRK_GPU_MEMORY_SHARE")


def scrubbed_env(base: dict[str, str] | None = None, **overrides: str) -> dict[str, str]:
    """The environment a worker starts with: allow-listed names only, never a secret-looking one."""
    base = dict(os.environ if base is None else base)
    env = {k: v for k, v in base.items() if _ENV_ALLOW.match(k) and not _SECRET_NAME.search(k)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update({k: v for k, v in overrides.items() if v is not None})
    return env


def candidate_env(base: dict[str, str] | None = None, **overrides: str) -> dict[str, str]:
    """The environment a candidate process starts with: the scrubbed one less the judge's own switches."""
    return {k: v for k, v in scrubbed_env(base, **overrides).items() if k not in JUDGE_ONLY}


def secret_values(env: dict[str, str] | None = None) -> list[str]:
    """Values of secret-looking variables in `env` (to redact from any text a worker sends back)."""
    env = os.environ if env is None else env
    return sorted({v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 8}, key=len, reverse=True)


# control characters but tab and newline: a candidate's output can carry terminal escapes (ESC, BEL) or NULs
# into an error text that a terminal, a log viewer or a model's prompt shows
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def redact(text: str, secrets: list[str]) -> str:
    """`text` without the secrets' values and with control characters (but tab and newline) shown as U+FFFD."""
    for s in secrets:
        if s in text:
            text = text.replace(s, "[redacted]")
    return _CONTROL.sub("\ufffd", text)


def audit_enabled() -> bool:
    """False when the evaluator's environment says DRK_AUDIT=off: an operator's switch for red-team runs
    (never a request option, and read before any candidate code exists) that leaves the audit hook out, so
    an attack suite shows what the OS sandbox and the judge's evidence catch without this layer. Results
    then record it in `protocol`."""
    return os.environ.get("DRK_AUDIT", "on") != "off"


PROTECTED_TYPES_FROM = ("torch", "triton", "drk", "builtins", "time", "json", "multiprocessing")


class Policy:
    """What the audit hook allows once armed. Paths are resolved to absolute real paths."""

    def __init__(self, workdir: str, triton_cache: str, allowed_exes: list[str]) -> None:
        self.workdir = os.path.realpath(workdir)
        self.write_roots = [self.workdir, os.path.realpath(triton_cache), "/dev/null", "/dev/shm"]
        read_roots = {self.workdir, os.path.realpath(triton_cache), sys.prefix, sys.base_prefix, sys.exec_prefix,
                      "/usr", "/lib", "/lib64", "/etc", "/sys", "/dev", "/opt", "/proc/self", "/proc/cpuinfo",
                      "/proc/meminfo", "/proc/stat", "/proc/driver", "/run/nvidia-persistenced",
                      f"/proc/{os.getpid()}", "/var/lib", "/bin", "/sbin"}
        read_roots.update(os.path.realpath(p) for p in sys.path if p and os.path.isdir(p))
        for var in ("CUDA_HOME", "CUDA_PATH", "TRITON_HOME"):
            if os.environ.get(var):
                read_roots.add(os.path.realpath(os.environ[var]))
        self.read_roots = sorted(read_roots)
        self.allowed_exes = {os.path.realpath(e) for e in allowed_exes if e}
        self.stdlib_dir = os.path.dirname(os.__file__) + os.sep
        self.no_native_roots = [self.workdir, os.path.realpath(triton_cache), "/tmp", "/dev/shm", "/var/tmp"]
        self.library_dirs = tuple(os.path.dirname(m.__file__) + os.sep for m in (
            sys.modules.get("torch"), sys.modules.get("triton")) if m is not None and getattr(m, "__file__", None))
        self.triton_dirs = tuple(d for d in self.library_dirs if d.rstrip(os.sep).endswith("triton"))
        self.armed = False
        self.violations: list[str] = []

    def _from_library(self, frame, dirs: tuple[str, ...] | None = None) -> bool:
        """True when the innermost non-stdlib Python frame doing the action is torch's or Triton's own code
        (Triton imports modules and patches its language classes lazily, at launch time)."""
        while frame is not None and (frame.f_code.co_filename == __file__ or self._stdlib(frame.f_code.co_filename)):
            frame = frame.f_back
        allowed = self.library_dirs if dirs is None else dirs  # an empty set allows nothing, never falls back
        return frame is not None and frame.f_code.co_filename.startswith(allowed)

    def _stdlib(self, filename: str) -> bool:
        """The standard library's own code. Installed packages are not, even where site-packages lies inside
        the stdlib folder (a Python built from source: /usr/local/lib/python3.12/site-packages)."""
        if filename.startswith("<frozen"):
            return True
        return filename.startswith(self.stdlib_dir) and not any(
            f"{os.sep}{d}{os.sep}" in filename[len(self.stdlib_dir) - 1:] for d in ("site-packages", "dist-packages"))

    @staticmethod
    def _under(path: str, roots: list[str]) -> bool:
        return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)

    def _deny(self, what: str) -> None:
        msg = f"sandbox: {what} is not allowed"
        if len(self.violations) < 20:
            self.violations.append(msg)
        raise PermissionError(msg)

    def check_open(self, path, mode, flags) -> None:
        if isinstance(path, int):
            self._deny(f"opening file descriptor {path}")
        if path is None:
            return
        p = os.path.realpath(os.fsdecode(path) if not isinstance(path, str) else path)
        if not os.path.isabs(p):
            p = os.path.join(self.workdir, p)
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
        if writing and not self._under(p, self.write_roots):
            self._deny(f"writing {p}")
        if not writing and not self._under(p, self.read_roots):
            self._deny(f"reading {p}")

    def check_exec(self, exe, env=None, search_path: bool = False) -> None:
        """Only Triton's own compiler calls may start a process, and only the exact binaries it uses. With
        `search_path` (subprocess, which searches PATH) a bare name (CC=gcc) is resolved as the exec will
        resolve it, on the PATH of `env` when one is given; otherwise (os.exec*, whose events carry the path
        actually executed, and posix_spawn, whose p-variant cannot be told apart) a bare name is a file in the
        working folder, never a compiler."""
        path = exe[0] if isinstance(exe, (list, tuple)) and exe else exe
        if path is None:
            self._deny("starting a process")
        p = os.fsdecode(path)
        p = os.path.realpath(_on_exec_path(p, env) if search_path and not os.path.dirname(p) else p)
        if p not in self.allowed_exes:
            self._deny(f"starting process {os.path.basename(p)}")
        if not self._from_library(sys._getframe(1), self.triton_dirs):
            self._deny(f"starting process {os.path.basename(p)} from outside Triton's own code")

    def __call__(self, event: str, args: tuple) -> None:
        if not self.armed:
            return
        if event == "open":
            self.check_open(*args[:3])
        elif event == "subprocess.Popen":  # (executable, args, cwd, env)
            self.check_exec(args[0] if args[0] is not None else args[1], args[3] if len(args) > 3 else None,
                            search_path=True)
        elif event in ("os.posix_spawn", "os.exec"):  # (path, argv, env)
            self.check_exec(args[0])
        elif event in ("os.system", "os.fork", "os.forkpty", "os.spawn", "pty.spawn", "os.startfile"):
            self._deny("starting a process")
        elif event.startswith("socket."):
            self._deny("network access")
        elif event in ("os.kill", "os.killpg", "signal.pthread_kill"):
            if args and args[0] not in (os.getpid(), 0):
                self._deny("signalling another process")
        elif event == "ctypes.dlopen":
            name = args[0]
            if name and "/" in str(name):
                real = os.path.realpath(str(name))
                if not self._under(real, self.read_roots) or self._under(real, self.no_native_roots):
                    self._deny(f"loading native library {name}")
        elif event in ("object.__setattr__", "object.__delattr__") and isinstance(args[0], type):
            mod = getattr(args[0], "__module__", "") or ""
            if mod.split(".")[0] in PROTECTED_TYPES_FROM and not self._from_library(sys._getframe(1)):
                self._deny(f"changing {mod}.{args[0].__name__}.{args[1]}")
        elif event in ("sys.addaudithook", "sys.setprofile", "sys.settrace", "sys._current_frames"):
            self._deny(event)


def _on_exec_path(name: str, env=None) -> str:
    """Where exec finds a bare `name`: on `env`'s PATH (the process's when `env` is None), as subprocess and
    os.exec*p search; a name found nowhere comes back unchanged (and is refused)."""
    import shutil

    if env is not None:  # str or bytes keys, as subprocess accepts
        env = {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()}
    return shutil.which(name, path=os.pathsep.join(os.get_exec_path(env))) or name


def triton_c_compiler() -> str:
    """The C compiler Triton runs for its launcher stubs: CC (a bare name resolved on PATH), else gcc on PATH;
    "" when there is none."""
    import shutil

    cc = os.environ.get("CC")
    return (_on_exec_path(cc) if cc and not os.path.dirname(cc) else cc) or shutil.which("gcc") or ""


def allowed_compilers() -> list[str]:
    """Binaries Triton runs itself: ptxas (and ptxas-blackwell) and the C compiler for launcher stubs (CC,
    which may be a bare name, else gcc or clang as Triton picks them)."""
    import shutil

    exes = [triton_c_compiler(), shutil.which("clang") or "",
            "/sbin/ldconfig", shutil.which("ldconfig") or ""]
    try:
        from triton import knobs

        for tool in ("ptxas", "ptxas_blackwell", "cuobjdump", "nvdisasm"):
            t = getattr(knobs.nvidia, tool, None)
            if t is not None and getattr(t, "path", None):
                exes.append(t.path)
    except Exception:  # no CUDA backend (CPU install): nothing to add
        pass
    return [e for e in exes if e and Path(e).exists()]
