"""OS isolation for candidate code: which mechanism this host offers, and the bubblewrap command that
builds the sandbox every candidate process lives in.

Rule: no fact the reward depends on may rest on the integrity of the candidate's own process, so the
boundary is drawn by the kernel, not by Python. Each evaluation slot runs one fork server
(`drk.gym.sandbox.zygote`) inside a bubblewrap sandbox:

- its own network namespace (no interface but a downed loopback), IPC, UTS and PID namespaces, a new
  session, and it dies with its judge (`--die-with-parent`);
- a read-only view of the host's system folders (/usr, /bin, /lib*, /sys, ...; `SYSTEM_TOP`) in which every
  other top-level folder (/root, /home, /tmp, /run, /opt, /var, the user's project folders) is an empty
  tmpfs, then only what Python, torch and Triton need is bound back read-only (the interpreter's prefixes,
  its library folders and `sys.path` without the working directory, the base Triton cache, CUDA's device
  nodes), so user files, keys, other projects and a repository's own solutions are not even visible;
- mode `root` (the evaluator runs as root, as on the H200 and CI): the fork server keeps only the
  capabilities for dropping to a uid, killing, owning files and making an IPC namespace; every candidate
  process gets its own IPC namespace, a seccomp filter (`drk.gym.sandbox.seccomp`: no new namespaces, no
  mounts) and drops to an unprivileged uid of its own (two per slot, alternating, so a candidate never
  shares a uid with the next one), with `no_new_privs`; after the evaluation every process of that uid is killed and its files removed. The
  pair is claimed host-wide (`claim_uid_pair`): per-uid limits such as RLIMIT_NPROC count every process of
  a uid on the host, so two evaluators sharing a uid would let one's candidate starve the other's;
- mode `userns` (an ordinary user, unprivileged user namespaces on): the same view inside a user
  namespace; the candidate keeps the user's uid *inside* the sandbox, and after each evaluation the fork
  server kills every other process in the sandbox's PID namespace and wipes /tmp. The candidates share the
  sandbox's /proc, so the sandbox itself shows zeroed copies of the host's running counters there (as root
  each candidate's own /proc gets them: `zygote.own_proc`).

Where neither works, `detect` refuses. The user's explicit switch (`allow_unsafe`, CLI
`--unsafe-no-sandbox`) turns isolation off, and every result then records `sandbox: none`.

Not here: the resource limits and privilege drop applied per candidate (`drk.gym.sandbox.zygote`), and the
judge's evidence rules (`drk.gym.judge.evaluation`).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

ROOT, USERNS, NONE = "root", "userns", "none"
HIDDEN = ("/root", "/home", "/tmp", "/var/tmp", "/run", "/mnt", "/media", "/srv")
HIDDEN_TMPFS_MB = 64  # a hidden folder's tmpfs where the sandbox bounds them (`bwrap_argv`'s tmpfs_mb)
# Top-level folders the sandbox shows as they are: the system's programs and libraries. Every other one
# (the user's projects, data, mounts, /opt, /var, ...) is an empty tmpfs, so a candidate cannot read a
# repository's solutions or any other world-readable file; what the interpreter needs is bound back.
SYSTEM_TOP = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/dev", "/sys", "/etc")
# /etc is an empty tmpfs too, with only what the loader, the C compiler and Python need bound back; the
# account files are the slot's own (root and the candidate uids), so no host detail can reach a result.
ETC_KEEP = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "nsswitch.conf", "localtime", "gai.conf",
            "host.conf", "mime.types")
SANDBOX_UID_BASE = 61000   # candidate uids: SANDBOX_UID_BASE + 2 * pair + {0, 1}; never a real account
UID_PAIRS = 2048           # pairs a host can hand out at once (uids 61000..65095)
UID_LOCK_DIRS = ("/run/lock/drk-sandbox-uids", "/var/lock/drk-sandbox-uids", "/tmp/drk-sandbox-uids")
PROBE_TIMEOUT_S = 20.0
# interpreter flag for the judge and the fork server: the folder drk was started from is not put on their
# sys.path, so it is neither importable nor bound into the sandbox (3.10 has no -P: _needed_paths skips it)
NO_CWD_ON_PATH = ("-P",) if sys.version_info >= (3, 11) else ()


class SandboxUnavailable(RuntimeError):
    """No OS isolation on this host and the user did not allow unsafe evaluation."""


@dataclass(frozen=True)
class Isolation:
    mode: str            # ROOT, USERNS or NONE
    bwrap: str = ""      # path of the bwrap binary (empty for NONE)
    reason: str = ""     # why NONE, when it is
    seccomp: str = ""    # why candidates get no seccomp filter here ("" when they do)

    @property
    def label(self) -> str:
        """What results record as `versions.sandbox`: the mode, and a missing filter said out loud."""
        return self.mode if (self.mode == NONE or not self.seccomp) else f"{self.mode} (no seccomp: {self.seccomp})"

    @property
    def sandboxed(self) -> bool:
        return self.mode != NONE


def find_bwrap() -> str:
    """$DRK_BWRAP, else bwrap on PATH (a `.deb` unpacked with `dpkg -x` works through $DRK_BWRAP)."""
    cand = os.environ.get("DRK_BWRAP") or shutil.which("bwrap") or ""
    return cand if cand and os.access(cand, os.X_OK) else ""


def hidden_roots() -> tuple[str, ...]:
    """The folders the sandbox replaces with empty tmpfs: HIDDEN, and every top-level folder of this host
    that is not a system one (symbolic links at the top are left alone: their targets are judged on their
    own)."""
    extra = []
    try:
        names = sorted(os.listdir("/"))
    except OSError:
        names = []
    for name in names:
        p = "/" + name
        if p in SYSTEM_TOP or p in HIDDEN or os.path.islink(p) or not os.path.isdir(p):
            continue
        extra.append(p)
    return HIDDEN + tuple(extra)


def _needed_paths() -> list[str]:
    """What a candidate process must be able to read: the interpreter, its libraries, torch, Triton. The
    `sys.path` of a process started with `-P` (the judge's and the fork server's): no working directory,
    so the folder drk was started from (a repository with its data and solutions) is never bound."""
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(p for p in sysconfig.get_paths().values() if p and os.path.isdir(p))
    for p in sys.path:
        if not p or not os.path.isdir(p) or p == os.getcwd():
            continue
        if _installed_packages_folder(p):
            paths.add(p)
        else:  # a project folder on the path: only what was imported from it, never its other files
            paths.update(_imported_from(p))
    for var in ("CUDA_HOME", "CUDA_PATH", "TRITON_HOME", "LD_LIBRARY_PATH"):
        for p in (os.environ.get(var) or "").split(os.pathsep):
            if p and os.path.isdir(p):
                paths.add(p)
    paths.update(_compiler_prefixes())
    return sorted({os.path.realpath(p) for p in paths} | paths)


def _installed_packages_folder(path: str) -> bool:
    """A folder of installed packages (site-packages, dist-packages, or inside the interpreter's prefixes), as
    opposed to a project folder on `sys.path`: the folder of the script that started drk, or one named in
    PYTHONPATH, whose other files (keys, .env, data) a candidate must not read (attack p01)."""
    real = os.path.realpath(path)
    if any(part in ("site-packages", "dist-packages") for part in real.split(os.sep)):
        return True
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in {
        os.path.realpath(x) for x in (sys.prefix, sys.base_prefix, sys.exec_prefix)} if r != os.sep)


def _imported_from(folder: str) -> set[str]:
    """The top-level packages and modules this process imported from `folder` (drk itself, from a checkout's
    src/): what the judge and the fork server need of it."""
    real = os.path.realpath(folder).rstrip(os.sep) + os.sep
    out = set()
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if not isinstance(f, str):
            continue
        rf = os.path.realpath(f)
        if rf.startswith(real):
            out.add(real + rf[len(real):].split(os.sep)[0])
    return out


def _compiler_prefixes() -> list[str]:
    """What of the C compiler Triton runs for its launchers (CC, else gcc on PATH) the candidate must see: a
    toolchain outside the system folders (CC=/opt/gcc/bin/gcc) must be in the candidate's view,
    read-only, or no candidate on the GPU can launch a kernel. The install prefix (.../bin/gcc -> ...) only
    where it is a compiler's own tree (it holds gcc's or clang's internals); anywhere else (CC=~/bin/gcc)
    only the compiler file itself, never the folder around it (a home folder with its keys)."""
    from drk.gym.sandbox.audit import triton_c_compiler

    found = [p for p in {triton_c_compiler(), shutil.which("gcc")} if p]
    out = []
    for p in found:
        for exe in {os.path.abspath(p), os.path.realpath(p)}:
            d = os.path.dirname(exe)
            prefix = os.path.dirname(d)
            if os.path.basename(d) == "bin" and prefix != "/" and any(
                    os.path.isdir(os.path.join(prefix, x)) for x in ("libexec/gcc", "lib/gcc", "lib64/gcc", "lib/clang")):
                out.append(prefix)
            elif os.path.isfile(exe):
                out.append(exe)
    return out


def _under_hidden(path: str, hidden: tuple[str, ...]) -> bool:
    return any(path == h or path.startswith(h + "/") for h in hidden)


def claim_uid_pair() -> tuple[list[int], int]:
    """Two candidate uids that no other evaluator on this host holds, and the descriptor whose lock holds
    them (an exclusive `flock` on one file per pair; the kernel releases it when the holder exits, however
    it exits, so a crashed evaluator never leaks its pair). Close the descriptor to give them back."""
    import fcntl
    import stat

    folder = None
    for d in UID_LOCK_DIRS:
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
            st = os.lstat(d)
        except OSError:
            continue
        # these parents are world-writable: a folder someone else made (or a link) could hold our locks or
        # redirect our files, so only one of our own, closed to others, is used
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022:
            folder = d
            break
    if folder is None:
        raise SandboxUnavailable(f"no writable folder for the sandbox's uid locks ({', '.join(UID_LOCK_DIRS)})")
    for i in range(UID_PAIRS):
        fd = os.open(os.path.join(folder, f"pair-{i}"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return [SANDBOX_UID_BASE + 2 * i, SANDBOX_UID_BASE + 2 * i + 1], fd
    raise SandboxUnavailable(f"all {UID_PAIRS} sandbox uid pairs are held by other evaluators on this host")


def fake_accounts(folder: str, uids: list[int]) -> str:
    """passwd and group files naming only root and the candidate uids (written into `folder`)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
        for u in uids:
            f.write(f"drk-sandbox-{u}:x:{u}:{u}:drk sandbox:/tmp:/bin/sh\n")
    with open(os.path.join(folder, "group"), "w") as f:
        f.write("root:x:0:\n" + "".join(f"drk-sandbox-{u}:x:{u}:\n" for u in uids))
    return folder


def bwrap_argv(iso: Isolation, *, binds_ro: list[str] = (), binds_rw: list[str] = (),
               accounts: str | None = None, counters: dict[str, str] | None = None,
               hidden_trees: tuple[str, ...] = (), tmpfs_mb: dict[str, int] | None = None) -> list[str]:
    """The bubblewrap prefix for one slot's fork server (`accounts`: a folder from `fake_accounts`; `counters`:
    {a host file or folder of running counters: the copy shown in its place}, `zygote.freeze_counters`;
    `hidden_trees`: folders shown empty). With `tmpfs_mb` ({"/tmp": MiB, "/dev/shm": MiB}) every tmpfs the
    sandbox makes is bounded: /tmp and /var/tmp and /dev/shm by those sizes, the other hidden folders by
    `HIDDEN_TMPFS_MB`. Without it they take the kernel's default, half the host's memory, and pages written
    there are charged to no process (attack n05): as root each candidate gets bounded tmpfs of its own
    instead (`zygote.own_tmp`)."""
    a = [iso.bwrap, "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-pid", "--unshare-cgroup-try",
         "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    for target, copy in (counters or {}).items():  # over the /proc just mounted and the host's /sys
        a += ["--ro-bind", copy, target]
    for tree in hidden_trees:
        if os.path.isdir(tree):
            a += ["--tmpfs", tree, "--remount-ro", tree]
    if iso.mode == USERNS:
        a += ["--unshare-user"]
    else:  # root: keep only what dropping to a candidate uid and killing its processes need
        # (CAP_SYS_ADMIN only to give each candidate its own IPC namespace before it drops to its uid, which
        # clears every capability; the fork server never runs candidate code)
        a += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL",
              "--cap-add", "CAP_CHOWN", "--cap-add", "CAP_FOWNER", "--cap-add", "CAP_DAC_OVERRIDE",
              "--cap-add", "CAP_SYS_ADMIN"]
    hidden = hidden_roots()
    for h in hidden + ("/etc",):
        if os.path.isdir(h):
            if tmpfs_mb is not None:
                a += ["--size", str(int(tmpfs_mb["/tmp"] if h in ("/tmp", "/var/tmp") else HIDDEN_TMPFS_MB) << 20)]
            a += ["--tmpfs", h]
    if tmpfs_mb is not None:  # bwrap's /dev has a /dev/shm of the kernel's default size
        a += ["--perms", "1777", "--size", str(int(tmpfs_mb["/dev/shm"]) << 20), "--tmpfs", "/dev/shm"]
    for name in ETC_KEEP:
        if os.path.exists(f"/etc/{name}"):
            a += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    if accounts:
        a += ["--ro-bind", f"{accounts}/passwd", "/etc/passwd", "--ro-bind", f"{accounts}/group", "/etc/group"]
    a += ["--chmod", "1777", "/tmp"]
    made: set[str] = set()

    def passable(p: str) -> list[str]:
        # bwrap creates the folders leading to a bind inside a hidden root's tmpfs with mode 0700, root's: the
        # candidate uid must pass them (only pass: what else they hold is the empty tmpfs)
        out, parts = [], p.strip("/").split("/")
        if _under_hidden(p, hidden):
            for i in range(2, len(parts)):
                anc = "/" + "/".join(parts[:i])
                if anc not in made:
                    made.add(anc)
                    out += ["--perms", "0755", "--dir", anc]
        return out

    for p in _needed_paths():
        if _under_hidden(p, hidden) and p not in hidden and os.path.exists(p):  # never a whole hidden root back
            a += passable(p) + ["--ro-bind", p, p]
    for p in binds_ro:
        a += passable(p) + ["--ro-bind", p, p]
    for p in binds_rw:
        a += passable(p) + ["--bind", p, p]
    for dev in sorted(glob.glob("/dev/nvidia*")):
        a += ["--dev-bind", dev, dev]
    for p in ("/run/nvidia-persistenced",):
        if os.path.exists(p):
            a += ["--ro-bind", p, p]
    return a + ["--"]


def _probe(iso: Isolation, code: str = "import os, socket; socket.socket().connect_ex(('1.1.1.1', 53)); "
           "print(os.getpid())") -> str:
    """Run a trivial Python inside the sandbox; '' when it works, else the reason."""
    try:
        out = subprocess.run(bwrap_argv(iso) + [sys.executable, *NO_CWD_ON_PATH, "-c", code], capture_output=True,
                             text=True,
                             timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}"
    if out.returncode != 0:
        return (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
    return ""


def exec_guard_wanted(device: str) -> bool:
    """Whether a slot's candidates get the exec guard (`drk.gym.sandbox.zygote.guard_exec`: every writable
    folder noexec, no executable memory files). DRK_EXEC_GUARD=on|off|auto (auto, the default: on for every
    device; on CUDA the launchers come from the judge and ptxas from a helper,
    docs/measurements/evaluator-isolation.md has the GPU runs that show it). Only `off` turns it off, for an
    operator's experiments; results record a slot without it (`versions.sandbox`)."""
    del device  # one rule for every device since CUDA runs under it
    return os.environ.get("DRK_EXEC_GUARD", "auto") != "off"


_detected: dict[bool, Isolation] = {}


def detect(allow_unsafe: bool = False) -> Isolation:
    """The isolation this host offers (probed once per process); raises SandboxUnavailable when there is
    none. `allow_unsafe` (the user's explicit switch) turns isolation off: mode NONE, recorded as such."""
    if allow_unsafe:
        return Isolation(NONE, "", "turned off by the user (--unsafe-no-sandbox)")
    if allow_unsafe in _detected:
        return _detected[allow_unsafe]
    bwrap = find_bwrap()
    reason = "bubblewrap (bwrap) is not installed"
    iso = None
    if bwrap:
        mode = ROOT if os.geteuid() == 0 else USERNS
        cand = Isolation(mode, bwrap)
        reason = _probe(cand)
        if not reason:
            # the filter is installed in a forked child (as the fork server does), so a refusal is seen here,
            # once, and recorded with every result instead of failing every candidate
            why = _probe(cand, "import os, sys\nfrom drk.gym.sandbox import seccomp\npid = os.fork()\n"
                               "if pid == 0:\n    ok = seccomp.install()\n    os._exit(0 if ok else 3)\n"
                               "st = os.waitpid(pid, 0)[1]\n"
                               "sys.exit('no table for this architecture' if st >> 8 == 3 else (1 if st else 0))")
            iso = Isolation(mode, bwrap, seccomp=why[:120])
        else:
            reason = f"bubblewrap cannot build a sandbox here ({reason[:200]})"
    if iso is None:
        raise SandboxUnavailable(
            f"cannot isolate candidate code: {reason}. Install bubblewrap (apt-get install bubblewrap, or set "
            "DRK_BWRAP to a bwrap binary), or pass --unsafe-no-sandbox to run untrusted code without isolation")
    _detected[allow_unsafe] = iso
    return iso
