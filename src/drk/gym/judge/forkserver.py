"""The judge's side of a slot's fork server (`drk.gym.sandbox.zygote`): start it inside the sandbox, ask it for a
fresh candidate process, kill that process and everything it started, read how much CPU it got.

Trusted code: it runs in the judge. The channel to the fork server carries JSON only; the candidate's own
channel is a separate socketpair whose far end travels to the child by SCM_RIGHTS, so a candidate never
holds a descriptor to the fork server or the judge's other channels.
"""
from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import tempfile
import threading

from drk.gym.common import wire
from drk.gym.common.modules import judge_platform_key
from drk.gym.sandbox import isolation, zygote
from drk.gym.sandbox.isolation import Isolation

START_TIMEOUT_S = 300.0
CALL_TIMEOUT_S = 60.0


class ForkServerGone(RuntimeError):
    """The fork server died or stopped answering (infrastructure, not the candidate)."""


class ForkServer:
    def __init__(self, iso: Isolation, device: str, slot_dir: str, base_cache: str, slot_index: int,
                 env: dict[str, str], limits: dict, exec_guard: bool = False) -> None:
        self.iso, self.device, self.slot_dir, self.base_cache = iso, device, slot_dir, base_cache
        self.limits = limits  # the candidates' (tmp_mb, shm_mb: their tmpfs sizes)
        self.exec_guard = exec_guard
        # CUDA under the exec guard: Triton's launchers are built by the judge into a folder candidates see
        # read-only (drk.gym.judge.launchers); None where candidates build nothing native (CPU) or may (no guard)
        self.launchers = None
        if exec_guard and iso.sandboxed and device.startswith("cuda"):
            from drk.gym.judge.launchers import LauncherBuilder

            self.launchers = LauncherBuilder(os.path.join(slot_dir, "launchers"))
        self.exec_guard_gap = "not asked for"  # why candidates' writable folders are not noexec ('' if they are)
        self.pid_namespace_gap = "not started"
        self.uid_lock: int | None = None
        if iso.mode == isolation.ROOT:  # real uids: claimed host-wide, held while this judge lives
            uids, self.uid_lock = isolation.claim_uid_pair()
        else:  # user namespace or no sandbox: the numbers only name accounts inside the sandbox
            uids = [isolation.SANDBOX_UID_BASE + 2 * slot_index + k for k in (0, 1)]
        self.uids = itertools.cycle(uids)
        self.accounts = isolation.fake_accounts(os.path.join(slot_dir, "etc"), uids + [os.getuid()])
        self.env = env
        self.lock = threading.Lock()
        self.ids = itertools.count()
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.broken = False  # its channel failed: whatever the process still does, it serves no one
        self.tmp_root = "/tmp"
        if not iso.sandboxed:  # no sandbox: children work in a folder of the slot's, never the host's /tmp
            self.tmp_root = tempfile.mkdtemp(prefix="cands-", dir=slot_dir)

    # ---- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.launch()
        self.wait_started()

    def launch(self) -> None:
        """Start the fork server's process without waiting for it: its imports (seconds) overlap whatever the
        judge does next; `wait_started` reads its hello."""
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, *isolation.NO_CWD_ON_PATH, "-m", "drk.gym.sandbox.zygote", "--fd", str(b.fileno()),
                "--mode", self.iso.mode, "--seccomp", "1" if self.iso.sandboxed and not self.iso.seccomp else "0",
                "--device", self.device, "--base-cache", self.base_cache, "--tmp-root", self.tmp_root,
                "--exec-guard", "1" if self.iso.sandboxed and self.exec_guard else "0",
                "--platform-key", judge_platform_key()]
        if self.iso.sandboxed:
            counters, hidden, sizes = {}, (), None
            if self.iso.mode == isolation.USERNS:
                # Candidates share the sandbox's /proc and tmpfs here (as root each gets a /proc and bounded tmpfs
                # of its own: zygote.own_proc, zygote.own_tmp), so the sandbox shows the counters' copies itself
                # and bounds its tmpfs to a candidate's sizes
                counters = zygote.freeze_counters(os.path.join(self.slot_dir, "frozen"))
                hidden = zygote.HIDDEN_TREES
                sizes = {"/tmp": int(self.limits["tmp_mb"]), "/dev/shm": int(self.limits["shm_mb"])}
            argv = isolation.bwrap_argv(self.iso, binds_ro=[self.base_cache] + self.module_folders()[1:],
                                        accounts=self.accounts, counters=counters, hidden_trees=hidden,
                                        tmpfs_mb=sizes) + argv
        log = open(os.path.join(self.slot_dir, "zygote.log"), "ab")
        self.proc = subprocess.Popen(argv, env=self.env, pass_fds=(b.fileno(),), stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        b.close()
        self.sock, self.broken = a, False

    def wait_started(self) -> None:
        try:
            hello = self._recv(START_TIMEOUT_S)
        except ForkServerGone:
            tail = wire.file_tail(os.path.join(self.slot_dir, "zygote.log"), 600).strip()
            self.stop()
            raise ForkServerGone(f"the sandboxed fork server failed to start: {tail[-400:] or 'no output'}") from None
        self.exec_guard_gap = str(hello.get("exec_guard", "not reported"))[:200]
        # why candidates share the slot's pid namespace ('' when each has its own: zygote.PidNamespaces)
        self.pid_namespace_gap = str(hello.get("pid_namespace", "not reported"))[:200]

    def alive(self) -> bool:
        """Running and still answering. A fork server whose channel failed counts as gone even while its
        process (or the sandbox around it) lingers, so the next spawn starts a new one instead of failing
        on the dead channel for every later candidate (attack n09)."""
        return self.proc is not None and self.proc.poll() is None and not self.broken

    def stop(self) -> None:
        if self.sock is not None:
            try:
                zygote.send(self.sock, {"op": "bye"})
            except OSError:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)  # it kills its children first
            except subprocess.TimeoutExpired:
                pass
            wire.kill_group(self.proc)
        wire.close_quietly(self.sock)
        self.proc, self.sock = None, None

    def module_folders(self) -> list[str]:
        """Where a candidate process loads Triton's native modules from, read-only: the base cache the
        judge warmed, then the judge's launcher folder (under the exec guard on CUDA)."""
        return [self.base_cache] + ([self.launchers.folder] if self.launchers is not None else [])

    # ---- calls -------------------------------------------------------------------------------------
    def _recv(self, timeout: float) -> dict:
        self.sock.settimeout(timeout)
        try:
            msg, _ = zygote.recv(self.sock)
        except (socket.timeout, EOFError, OSError, ValueError) as e:
            self.broken = True
            raise ForkServerGone(f"fork server: {type(e).__name__}") from None
        return msg

    def _call(self, msg: dict, fds: list[int] = ()) -> dict:
        with self.lock:
            if not self.alive():
                raise ForkServerGone("fork server is not running")
            try:
                zygote.send(self.sock, msg, fds)
            except OSError as e:
                self.broken = True
                raise ForkServerGone(f"fork server: {e}") from None
            return self._recv(CALL_TIMEOUT_S)

    def spawn(self, conn_fd: int, log_fd: int, runner_opts: dict, limits: dict,
              modules_fd: int | None = None) -> tuple[str, int]:
        """A fresh candidate process on `conn_fd` (and `modules_fd`, its channel to the launcher builder);
        returns (its id, its uid)."""
        cid = f"{os.getpid()}-{next(self.ids)}"
        uid = next(self.uids) if self.iso.mode == isolation.ROOT else os.getuid()
        fds = [conn_fd, log_fd] + ([modules_fd] if modules_fd is not None else [])
        reply = self._call({"op": "spawn", "id": cid, "uid": uid, "env": self.env, "runner": runner_opts,
                            "limits": limits}, fds)
        if not reply.get("ok"):
            raise ForkServerGone(f"fork server could not start a candidate process: {reply}")
        return cid, uid

    def kill(self, cid: str) -> bool:
        """Kill the candidate's processes and remove its files; False if some survived."""
        try:
            return bool(self._call({"op": "kill", "id": cid}).get("ok"))
        except ForkServerGone:
            return False

    def usage(self, cid: str) -> dict:
        try:
            return self._call({"op": "usage", "id": cid})
        except ForkServerGone:
            return {"ok": False}
