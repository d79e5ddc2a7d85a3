"""The fork server (`python -m drk.gym.sandbox.zygote`): one per evaluation slot, inside the slot's sandbox.

It imports torch, Triton and the runner once, never initialises CUDA and never runs candidate code, then
forks one fresh interpreter per candidate, so nothing (environment, module attributes, `sys.modules`,
threads, files, GPU allocations) can pass from one candidate to the next, at the cost of a fork instead
of a ~5 s interpreter start.

Per candidate, in the forked child, before any candidate code exists in it: every inherited descriptor
but its evaluation channel and log is closed, the environment is replaced by the judge's scrubbed one, a
private work directory (HOME, TMPDIR, Triton cache seeded from the slot's read-only base cache) is made,
resource limits are set, and in `root` mode the child drops to the candidate uid with no supplementary
groups, `no_new_privs` and a parent-death signal. Then `drk.gym.sandbox.runner` takes over.

After the evaluation the judge says `kill`: the fork server kills every process of that candidate (by
uid in `root` mode, every process of the sandbox but itself in `userns` mode; setsid and double-forked
ones too), checks none is left, and removes its files. `usage` reports a child's CPU and run-queue
times so the judge charges a candidate only for time it actually got.

Channel: a SOCK_SEQPACKET socket to the judge; one JSON object per packet, descriptors by SCM_RIGHTS.
"""
from __future__ import annotations

import argparse
import errno
import glob
import json
import os
import re
import shutil
import signal
import socket
import sys
import time

from drk.gym.sandbox import landlock, seccomp

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
MS_NOSUID, MS_NOEXEC, MS_REMOUNT, MS_BIND = 2, 8, 32, 4096
# statvfs's ST_* bits as mount(2)'s MS_* flags: a bind remount must repeat the flags a mount already has
# (the kernel refuses to clear a locked one, and drops any left out)
_ST_TO_MS = {1: 1, 2: 2, 4: 4, 8: 8, 16: 16, 64: 64, 1024: 1024, 2048: 2048, 4096: 1 << 21}
CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID = 0x08000000, 0x40000000, 0x00020000, 0x20000000
MS_NODEV, MS_RDONLY, MS_REC, MS_PRIVATE = 4, 1, 16384, 1 << 18
# what bubblewrap covers read-only in the /proc it mounts; a candidate's own /proc covers them the same way
PROC_COVERED = ("sys", "sysrq-trigger", "irq", "bus")
# host-wide running counters a candidate can move and the next one read (`freeze_counters`); others stay
# (docs/ARCHITECTURE.md, "What the sandbox does not separate")
FROZEN_COUNTERS = ("/proc/stat", "/proc/vmstat", "/proc/interrupts", "/proc/softirqs", "/proc/schedstat",
                   "/proc/diskstats", "/proc/loadavg", "/proc/pressure/*", "/proc/zoneinfo", "/proc/buddyinfo",
                   "/proc/pagetypeinfo", "/proc/uptime", "/proc/sys/fs/dentry-state", "/proc/sys/fs/inode-state",
                   "/sys/devices/system/node/node*/vmstat", "/sys/devices/system/node/node*/numastat")
# folders of such counters, frozen whole (one mount instead of one per file), and folders hidden (an empty
# read-only tmpfs): the cgroup tree shows the host's or the container's running CPU, memory and pressure totals
FROZEN_TREES = ("/sys/kernel/mm/transparent_hugepage",)
HIDDEN_TREES = ("/sys/fs/cgroup",)
# a candidate's own tmpfs (`own_tmp`): inodes enough for Triton's and torch's caches, bounded so that
# millions of empty files (which cost no size) cannot pile up
TMP_INODES, SHM_INODES = 1 << 16, 1 << 12
MAX_PACKET = 65536
KILL_WAIT_S = 20.0  # how long a kill sweep waits for killed processes to be gone


def _prctl(option: int, arg: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, arg, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _unshare(flags: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), f"unshare({flags:#x}) failed")


def _setns(fd: int, flags: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, flags) != 0:
        raise OSError(ctypes.get_errno(), f"setns({flags:#x}) failed")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    enc = (lambda x: None if x is None else x.encode())
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target} failed")


def _mount_flags(point: str) -> int:
    """The flags the mount at `point` has now, as mount(2) takes them: a bind remount must repeat them."""
    have = os.statvfs(point).f_flag
    return sum(ms for st, ms in _ST_TO_MS.items() if have & st)


# a count in a counter file: a run of digits that is not part of a name (cpu0, dma32, avg10)
_COUNT = re.compile(rb"(?<![A-Za-z0-9_])[0-9]+")
# the files of the THP folder that hold settings (only the host's root changes them): copied as they are;
# every other file there is a count (stats/*, khugepaged's pages_collapsed and full_scans, and any a later kernel adds)
THP_SETTINGS = frozenset({"enabled", "defrag", "use_zero_page", "hpage_pmd_size", "shmem_enabled", "max_ptes_none",
                          "max_ptes_swap", "max_ptes_shared", "pages_to_scan", "scan_sleep_millisecs",
                          "alloc_sleep_millisecs"})


def freeze_counters(folder: str, counters=FROZEN_COUNTERS, trees=FROZEN_TREES) -> dict[str, str]:
    """Copies, made once by the fork server, of the files that show host-wide running counters
    (`FROZEN_COUNTERS`, `FROZEN_TREES`): {the file or folder: its copy}. A candidate can move such a counter by
    a chosen amount (threads started, pages locked, interrupts caused, huge pages faulted) and the next one read
    it back: a channel between candidates that no namespace separates (attacks n03, n06, p03). Each candidate
    sees the copies in their place (`own_proc`), in the format readers expect, with every count 0: a copy of
    the values would carry whatever a candidate had set them to before this fork server started (a new pool,
    a restart) to every candidate after."""
    os.makedirs(folder, mode=0o755, exist_ok=True)
    out = {}

    def copy_file(target: str, copy: str, counts: bool = True) -> bool:
        try:
            with open(target, "rb") as f:
                data = f.read(1 << 20)
        except OSError:
            return False
        try:  # a copy left by an earlier fork server of the slot is read-only: a new file takes its place
            os.unlink(copy)
        except FileNotFoundError:
            pass
        with open(copy, "wb") as f:
            f.write(_COUNT.sub(b"0", data) if counts else data)
        os.chmod(copy, 0o444)
        return True

    targets = [t for pattern in counters for t in sorted(glob.glob(pattern))]
    for i, target in enumerate(targets):
        copy = os.path.join(folder, f"{i}-{os.path.basename(target)}")
        if copy_file(target, copy):
            out[target] = copy
    for i, tree in enumerate(trees):  # (THP's counters: anon_fault_alloc moved by MADV_HUGEPAGE, p03)
        if not os.path.isdir(tree):
            continue
        top = os.path.join(folder, f"tree{i}")
        for dirpath, dirnames, filenames in os.walk(tree):  # sysfs: shallow; links are not followed
            here = os.path.join(top, os.path.relpath(dirpath, tree))
            os.makedirs(here, mode=0o755, exist_ok=True)
            for name in filenames:
                copy_file(os.path.join(dirpath, name), os.path.join(here, name), counts=name not in THP_SETTINGS)
        out[tree] = top
    return out


_FROZEN: dict[str, str] = {}  # set once in the fork server (`freeze_counters`), before any candidate exists


def own_proc() -> None:
    """In a process that is pid 1 of a pid namespace of its own: a mount namespace of its own with a /proc of
    that pid namespace (noexec, nosuid, nodev; bubblewrap's read-only covers repeated), and the fork server's
    frozen copies over the host-wide counters (`freeze_counters`). Without it /proc/self would still name the
    process by its pid in the slot's namespace."""
    _unshare(CLONE_NEWNS)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    ro = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    for name in PROC_COVERED:
        path = "/proc/" + name
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            _mount(None, path, None, ro)
    for target, copy in _FROZEN.items():
        if os.path.exists(target):
            _mount(copy, target, None, MS_BIND)
            _mount(None, target, None, ro)
    for tree in HIDDEN_TREES:
        if os.path.isdir(tree):
            _mount("tmpfs", tree, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=16")


def own_tmp(workdir: str, tmp_mb: int, shm_mb: int, noexec: bool) -> None:
    """In a candidate's own mount namespace (`own_proc`): a fresh tmpfs of its own as its work folder and as
    /dev/shm, each with a size and an inode bound, and the slot's /tmp read-only. The slot's tmpfs outlived
    every candidate: its inode counter carried a byte to the next one (attack n01), and its size was half the
    host's memory, outside every per-process limit (attack n05: 3 GiB written at 255 MB resident). A tmpfs
    that only the candidate's namespace mounts is freed with it, whatever it holds, with nothing to clean
    (attack n09: a tree too deep to remove). `noexec` where the slot's writable folders are (the exec guard)."""
    flags = MS_NOSUID | MS_NODEV | (MS_NOEXEC if noexec else 0)
    os.makedirs(workdir, mode=0o700)
    _mount("tmpfs", workdir, "tmpfs", flags, f"size={int(tmp_mb)}m,nr_inodes={TMP_INODES},mode=0700")
    _mount("tmpfs", "/dev/shm", "tmpfs", flags, f"size={int(shm_mb)}m,nr_inodes={SHM_INODES},mode=1777")
    _mount(None, "/tmp", None, MS_REMOUNT | MS_BIND | MS_RDONLY | _mount_flags("/tmp"))


class PidNamespaces:
    """A pid namespace per candidate (mode `root`): the slot's namespace hands out pids in increasing order, so
    the pid a candidate gets tells how many its predecessor used, a channel of about a byte per candidate
    (attack m02); in a namespace of its own every candidate is pid 1, and everything it started dies with
    it. The fork server unshares before each fork (the next child is pid 1 of a new namespace) and goes back
    to its own namespace for children after it; the child mounts its own /proc (`own_proc`). `gap` is '' when
    this works here, else why not (found by trying once at start)."""

    def __init__(self, mode: str) -> None:
        self.fd = -1
        self.gap = "only as root" if mode != "root" else ""
        if not self.gap:
            self.fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            self.gap = self._try()

    def fork(self) -> int:
        """os.fork(), the child in a new pid namespace when `gap` is ''."""
        if self.gap:
            return os.fork()
        _unshare(CLONE_NEWPID)
        try:
            pid = os.fork()
        except BaseException:
            _setns(self.fd, CLONE_NEWPID)
            raise
        if pid != 0:
            _setns(self.fd, CLONE_NEWPID)  # later children (kill sweeps never fork; the next spawn unshares again)
        return pid

    def _try(self) -> str:
        try:
            _unshare(CLONE_NEWPID)
        except OSError as e:
            return f"no new pid namespace: {os.strerror(e.errno or 0)}"
        try:
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    own_proc()
                    code = 0 if os.getpid() == 1 and os.readlink("/proc/self") == "1" else 4
                except BaseException:  # noqa: BLE001
                    pass
                os._exit(code)
        finally:
            _setns(self.fd, CLONE_NEWPID)  # in the fork server: must hold, or its next child has nowhere to go
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        return "" if code == 0 else f"a candidate's own /proc could not be mounted (setup exit {code})"


def send(sock: socket.socket, msg: dict, fds: list[int] = ()) -> None:
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def recv(sock: socket.socket, nfds: int = 0) -> tuple[dict, list[int]]:
    if nfds:
        data, fds, _flags, _addr = socket.recv_fds(sock, MAX_PACKET, nfds)
    else:
        data, fds = sock.recv(MAX_PACKET), []
    if not data:
        raise EOFError
    return json.loads(data), list(fds)


def _processes() -> list[tuple[int, int]]:
    """(pid, real uid) of every live process this PID namespace shows (zombies run nothing: skipped)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if fields.get("State", "").strip().startswith(("Z", "X")):
                continue
            out.append((int(name), int(fields["Uid"].split()[0])))
        except (OSError, ValueError, IndexError, KeyError):
            continue
    return out


def _unescape(field: str) -> str:
    """A path as /proc/self/mountinfo writes it (space, tab, newline and backslash as octal escapes)."""
    import re

    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def writable_mounts(folders_only: bool = True) -> list[str]:
    """Mount points of this mount namespace that are mounted read-write: folders, and with `folders_only`
    False also what is bound on its own (a device node such as /dev/zero or a GPU's)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and "rw" in parts[5].split(","):
                point = _unescape(parts[4])
                # a point that does not exist here is hidden by a later mount
                if os.path.isdir(point) or (not folders_only and os.path.exists(point)):
                    out.append(point)
    return out


def guard_exec() -> str:
    """Remount every writable folder of the sandbox (its /tmp, /dev, /dev/shm, the hidden roots, /proc) and
    every device node bound on its own noexec and nosuid, so nothing a candidate writes can be mapped
    executable or run: a shared object it carries or compiles fails in the loader, a program it writes fails
    in execve. Together with the seccomp
    rule against executable memory files (`seccomp.install(exec_guard=True)`) and the read-only system view,
    native code reaches a candidate process only from files the sandbox shows read-only. Anonymous memory
    mapped executable is refused too (seccomp), and writing into the loader's own pages through
    /proc/self/mem (Landlock: `drk.gym.sandbox.landlock`); torch's oneDNN code generator is off there. Needs
    CAP_SYS_ADMIN over the sandbox's mount namespace (mode `root`); returns '' when every writable folder
    is noexec afterwards, else why not."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    # Device nodes too: /dev/zero mapped shared and executable is fresh memory, and a second view of it made
    # by mremap can be made writable without ever asking for PROT_EXEC again (attack k18)
    for point in writable_mounts(folders_only=False):
        flags = _mount_flags(point)
        if libc.mount(None, point.encode(), None, MS_REMOUNT | MS_BIND | flags | MS_NOEXEC | MS_NOSUID, None) != 0:
            err = ctypes.get_errno()
            if err == errno.EINVAL and not os.path.ismount(point):
                continue  # a mount hidden under a later one (the host's /dev/shm under the sandbox's /dev)
            return f"remounting {point} noexec failed: {os.strerror(err)}"
    left = [p for p in writable_mounts(folders_only=False) if not os.statvfs(p).f_flag & os.ST_NOEXEC]
    return f"still executable: {', '.join(left)[:200]}" if left else ""


def remove_trees(paths: list[str]) -> None:
    """Remove each path (a file, a link or a folder with everything beneath it), never following links and
    never recursing in Python: a candidate can nest folders deeper than Python's recursion limit and than
    PATH_MAX (attack n09: 1100 levels made shutil.rmtree raise and took the fork server down). One GNU rm
    walks any depth; without it, shutil with the failure swallowed. Errors leave files behind, never raise."""
    paths = [p for p in paths if os.path.lexists(p)]
    if not paths:
        return
    import subprocess

    rm, chmod = shutil.which("rm"), shutil.which("chmod")
    if chmod and os.geteuid() != 0:
        # Without root (user namespaces) a folder its owner made unreadable (mode 000, attack i04) stops rm, which
        # the owner's capabilities do not override as root's do: every folder opened to its owner first (GNU
        # chmod -R changes a folder before it reads it, and follows no link)
        try:
            subprocess.run([chmod, "-R", "u+rwx", "--", *paths], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120, check=False)
        except (OSError, subprocess.SubprocessError):
            pass
    if rm:
        try:
            subprocess.run([rm, "-rf", "--one-file-system", "--", *paths], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
            return
        except (OSError, subprocess.SubprocessError):
            pass
    for path in paths:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except (OSError, RecursionError):
            pass


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return -1


class Zygote:
    def __init__(self, a: argparse.Namespace) -> None:
        self.sock = socket.socket(fileno=a.fd)
        self.mode, self.device, self.base_cache = a.mode, a.device, a.base_cache
        self.seccomp = a.seccomp == "1"
        # before anything else: every candidate forked later inherits the remounted view
        mounts = guard_exec() if a.exec_guard == "1" else "not asked for"
        if self.mode == "root":  # before the pid namespace probe, whose child mounts the copies already; named
            # like the evaluator's other folders (drk-gym-*), root's and read-only to every candidate
            _FROZEN.update(freeze_counters(os.path.join(a.tmp_root, "drk-gym-frozen")))
        self.pid_ns = PidNamespaces(self.mode)
        self.guarded = not mounts
        no_landlock = landlock.available()
        self.exec_guard = mounts or no_landlock  # '' only when the whole guard holds
        # the folders a guarded candidate may write beneath (Landlock): the writable mounts but /proc and /sys;
        # None where the kernel has no Landlock (the hello's exec_guard told the judge)
        self.writable = None if no_landlock else \
            [p for p in writable_mounts() if p.split("/")[1:2] not in (["proc"], ["sys"])]
        self.tmp = a.tmp_root  # the sandbox's own /tmp; without a sandbox, a folder of the slot's
        self.children: dict[str, dict] = {}  # id -> {pid, uid, workdir}
        _prctl(PR_SET_DUMPABLE, 0)  # no process of the candidate's uid may ptrace or read our memory
        import torch  # noqa: F401  (the point of the fork server: imported once, shared copy-on-write)
        import torch._dynamo  # noqa: F401
        import torch.multiprocessing  # noqa: F401
        import torch.profiler  # noqa: F401
        import triton  # noqa: F401
        import triton.language  # noqa: F401

        pin_platform_key(a.platform_key)
        if self.device != "cpu":
            # Triton finds libcuda with ldconfig and learns ptxas's version by running it: done once here, where
            # programs may run, and cached for every candidate, whose filter refuses them new programs
            from triton.backends.nvidia import driver

            from drk.gym.sandbox import ptxas

            driver.libcuda_dirs()
            ptxas.resolve_tools()
            warm_triton_key()

        from drk.gym.sandbox import runner  # noqa: F401

    def serve(self) -> None:
        send(self.sock, {"op": "hello", "pid": os.getpid(), "mode": self.mode, "exec_guard": self.exec_guard,
                         "pid_namespace": self.pid_ns.gap})
        while True:
            self._reap()
            try:
                msg, fds = recv(self.sock, nfds=3)
            except (EOFError, ConnectionError, OSError):
                break
            op = msg.get("op")
            if op == "spawn":
                send(self.sock, self.spawn(msg, fds))
            elif op == "kill":
                send(self.sock, self.kill(msg["id"]))
            elif op == "usage":
                send(self.sock, self.usage(msg["id"]))
            elif op == "bye":
                break
            for fd in fds:  # the child has its copies; ours must not keep its channel open
                os.close(fd)
        for cid in list(self.children):
            self.kill(cid)

    def _reap(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def spawn(self, msg: dict, fds: list[int]) -> dict:
        if len(fds) not in (2, 3):
            return {"op": "spawn", "ok": False, "error": f"spawn needs 2 or 3 descriptors, got {len(fds)}"}
        conn_fd, log_fd = fds[:2]
        modules_fd = fds[2] if len(fds) == 3 else -1  # the channel to the judge's launcher builder
        cid, uid = msg["id"], int(msg.get("uid", os.getuid()))
        workdir = os.path.join(self.tmp, f"cand-{cid}")
        pid = self.pid_ns.fork()
        if pid == 0:  # the candidate's process: never returns
            try:
                _become_candidate(conn_fd, log_fd, workdir, uid, self.mode, msg, self.base_cache, self.seccomp,
                                  self.guarded, modules_fd, self.writable, self.device, not self.pid_ns.gap)
            except BaseException as e:  # noqa: BLE001 - setup failed: say why on the log, exit non-zero
                os.write(2, f"sandbox setup failed: {type(e).__name__}: {e}\n".encode())
            os._exit(3)
        self.children[cid] = {"pid": pid, "uid": uid, "workdir": workdir, "start": time.monotonic()}
        return {"op": "spawn", "ok": True, "pid": pid}

    def kill(self, cid: str) -> dict:
        child = self.children.pop(cid, None)
        if child is None:
            return {"op": "kill", "ok": True, "left": 0}
        me = os.getpid()

        def targets() -> list[int]:
            procs = _processes()
            if self.mode == "root":
                return [p for p, u in procs if u == child["uid"] and p != me]
            if self.mode == "userns":
                return [p for p, _u in procs if p not in (1, me)]  # everything but bwrap's init and us
            return [p for p, _u in procs if _pgid(p) == child["pid"]]  # no sandbox: its session only

        # A forking process can add children while we sweep: repeat until none is left. A killed process
        # can take seconds to go (a CUDA context is torn down only after the kernels it queued end), so the
        # sweep waits up to KILL_WAIT_S before it reports a survivor; nothing it kills runs user code again.
        left = []
        t_end = time.monotonic() + KILL_WAIT_S
        while True:
            left = targets()
            if not left or time.monotonic() > t_end:
                break
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)
            self._reap()
        self._reap()
        self._wipe(child)
        return {"op": "kill", "ok": not left, "left": len(left)}

    def _wipe(self, child: dict) -> None:
        """Remove the candidate's files: its work directory and anything else it left in /tmp or /dev/shm.
        Never fatal: a fork server that dies here takes the slot with it (attack n09)."""
        if self.mode == "none":  # the host's own /tmp: only the work directory is ours to remove
            remove_trees([child["workdir"]])
            return
        doomed = []
        for top in ("/tmp", "/dev/shm"):
            try:
                names = os.listdir(top)
            except OSError:
                continue
            for name in names:
                path = os.path.join(top, name)
                try:
                    owner = os.lstat(path).st_uid
                except OSError:
                    continue
                if path == child["workdir"] or self.mode != "root" or owner == child["uid"]:
                    doomed.append(path)
        remove_trees(doomed)

    def usage(self, cid: str) -> dict:
        """CPU time the candidate got (every thread of its process and, in `root` mode, of every process of
        its uid), the time its main thread spent runnable but waiting for a CPU (host load, or the
        candidate's own threads: the judge tells them apart with `cpu_s` over `cores`), and the CPUs it may
        use."""
        child = self.children.get(cid)
        if child is None:
            return {"op": "usage", "ok": False}
        cpu_ns = wait_ns = 0
        main = child["pid"]
        members = [main]
        if self.mode == "root":
            members += [p for p, u in _processes() if u == child["uid"] and p != main]
        try:
            cores = len(os.sched_getaffinity(main))
            for pid in members:
                try:
                    tids = os.listdir(f"/proc/{pid}/task")
                except OSError:
                    if pid == main:
                        raise
                    continue  # a process of the candidate that just exited
                for tid in tids:
                    try:
                        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                            run, wait, _ = f.read().split()
                    except OSError:
                        continue
                    cpu_ns += int(run)
                    if pid == main and tid == str(main):
                        wait_ns = int(wait)  # the main thread: the one the evaluation waits on
        except (OSError, ValueError):
            return {"op": "usage", "ok": False}
        return {"op": "usage", "ok": True, "cpu_s": cpu_ns / 1e9, "wait_s": wait_ns / 1e9,
                "cores": max(1, cores), "age_s": time.monotonic() - child["start"]}


def pin_platform_key(key: str) -> None:
    """Every candidate keys Triton's native modules by the judge's `platform_key()` (`key`; '' leaves Triton's).
    Triton's own asks the `file` program about the interpreter, and a candidate under the exec guard may start
    no program, so its answer would differ from the judge's, and the driver utilities and launchers the judge
    built would never be found under their keys. Routing, not a defence: candidate code may change it, and
    then only its own lookups miss."""
    if not key:
        return
    import triton.runtime.build as build

    build.platform_key = lambda: key


def warm_triton_key() -> bool:
    """Compute Triton's cache key of its own sources once, here: it hashes the compiler's files and all of
    libtriton, and every candidate process's first kernel needs it, at its start-up's
    warm-up, which holds the GPU shared; forked from here, each inherits the answer. No CUDA, no candidate
    code. False where this Triton keeps no such key."""
    try:
        from triton.runtime.cache import triton_key
    except ImportError:
        return False
    triton_key()
    return True


def _start_cuda(device: str) -> None:
    """Initialise CUDA and its primary context on `device` in this process (a small allocation and a sync)."""
    import torch

    dev = torch.device(device)
    torch.cuda.init()
    torch.cuda.set_device(dev)
    torch.zeros(1, device=dev).add_(1)
    torch.cuda.synchronize(dev)


def _become_candidate(conn_fd: int, log_fd: int, workdir: str, uid: int, mode: str, msg: dict,
                      base_cache: str, filtered: bool, guarded: bool = False, modules_fd: int = -1,
                      writable: list[str] | None = None, device: str = "cpu", own_pids: bool = False) -> None:
    """Runs in the forked child: make it a sandboxed, unprivileged, single-candidate process."""
    import resource

    stamps = {"forked": time.monotonic()}  # the start-up's steps, reported in the hello (`Runner.stamps`)
    os.setsid()
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    keep = {0, 1, 2, conn_fd} | ({modules_fd} if modules_fd >= 0 else set())
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    lim = msg.get("limits") or {}
    if mode == "root" and own_pids:  # pid 1 of a pid namespace of its own (`PidNamespaces`): a /proc that
        own_proc()                   # shows it so, and files of its own that die with it
        own_tmp(workdir, int(lim.get("tmp_mb", 1024)), int(lim.get("shm_mb", 256)), guarded)
    else:
        os.makedirs(workdir, mode=0o700)
    cache = os.path.join(workdir, "triton-cache")
    if base_cache and os.path.isdir(base_cache):
        shutil.copytree(base_cache, cache)
    else:
        os.makedirs(cache)
    if mode == "root":
        for dirpath, dirnames, filenames in os.walk(workdir):
            for n in [dirpath] + [os.path.join(dirpath, x) for x in dirnames + filenames]:
                os.lchown(n, uid, uid)
    env = dict(msg.get("env") or {})
    env.update(HOME=workdir, TMPDIR=workdir, TRITON_CACHE_DIR=cache, USER="drk-sandbox", LOGNAME="drk-sandbox")
    os.environ.clear()
    os.environ.update(env)
    import tempfile

    tempfile.tempdir = workdir  # the fork server's imports may have cached its own temp folder
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(lim.get("file_mb", 512)) << 20,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    if lim.get("nproc") and mode == "root":
        resource.setrlimit(resource.RLIMIT_NPROC, (int(lim["nproc"]),) * 2)
    if lim.get("address_space_gb"):
        resource.setrlimit(resource.RLIMIT_AS, (int(float(lim["address_space_gb"]) * 2**30),) * 2)
    if mode == "root":
        # its own IPC and network namespaces: SysV shared memory, queues, semaphores, POSIX queues, and sockets
        # (TIME_WAIT connections, abstract unix names) die with it; in the slot's namespaces they would outlive
        # it, keep their memory and reach the next candidate (attack l02: a message in /proc/net/tcp)
        _unshare(CLONE_NEWIPC | CLONE_NEWNET)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise OSError("could not drop to the candidate uid")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    stamps["sandboxed"] = time.monotonic()
    if guarded and writable is not None:
        if device != "cpu":
            # CUDA starts before the write rule: the driver's start writes under /proc/self/task (the probe
            # of bench/guard_cuda_probe.py: with writes confined to /tmp and /dev, cuInit fails, error 304),
            # and granting /proc/self/task would grant its threads' `mem` files too, the very writes the
            # rule exists to refuse. No candidate code has run yet, so nothing it does reaches the start.
            _start_cuda(device)
            stamps["cuda_early"] = time.monotonic()
        landlock.restrict_writes(writable)
    ptxas_fd, tools = -1, []
    if guarded and filtered and device != "cpu":
        # CUDA: Triton still runs ptxas per kernel, so a helper made now (before the filter that refuses this
        # process new programs) runs it; the binaries are resolved while they may still be run
        from drk.gym.sandbox import ptxas

        tools = ptxas.resolve_tools()
        ptxas_fd = ptxas.start_helper(tools, lambda: seccomp.install(exec_guard=True))
    if filtered:  # the host's refusal, if any, was found by the probe and is recorded with every result
        seccomp.install(exec_guard=guarded, no_processes=guarded)
    if guarded:  # oneDNN's code generator needs executable anonymous memory, which the filter refuses
        import torch

        torch.backends.mkldnn.enabled = False
    os.chdir(workdir)
    from drk.gym.sandbox.runner import run_candidate_process

    opts = dict(msg.get("runner") or {}, stamps=stamps)
    if modules_fd >= 0:
        opts["modules_fd"] = modules_fd
    if ptxas_fd >= 0:
        opts.update(ptxas_fd=ptxas_fd, ptxas_tools=tools)
    run_candidate_process(conn_fd, opts, workdir, cache)
    os._exit(0)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--mode", default="root", choices=["root", "userns", "none"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--base-cache", default="")
    p.add_argument("--tmp-root", default="/tmp")
    p.add_argument("--seccomp", default="1", choices=["0", "1"])
    p.add_argument("--exec-guard", default="0", choices=["0", "1"])
    p.add_argument("--platform-key", default="")
    a = p.parse_args()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        z = Zygote(a)
    except BaseException:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        sys.exit(3)
    z.serve()
    os._exit(0)


if __name__ == "__main__":
    main()
