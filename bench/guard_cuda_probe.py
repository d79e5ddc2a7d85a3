"""Which layer of the exec guard keeps CUDA from starting? Each case runs in a fresh forked child (CUDA never
initialised in the parent), applies some of the candidate process's layers and then initialises CUDA and
allocates one tensor. Prints one JSON line per case. Run as root on a GPU host:

    PYTHONPATH=src python3 bench/guard_cuda_probe.py [case name ...]
"""
from __future__ import annotations

import ctypes
import glob
import json
import os
import sys
import traceback

from drk.gym.sandbox import landlock, seccomp

ARCH = seccomp.native_arch()
BOGUS = 0x3FF  # a system call number no kernel has: a rule keyed on it never fires


def filt(exec_guard=False, no_processes=False, off=()):
    def apply():
        saved = dict(seccomp.ARCHES[ARCH])
        for name in off:
            seccomp.ARCHES[ARCH][name] = BOGUS
        try:
            seccomp.install(exec_guard=exec_guard, no_processes=no_processes)
        finally:
            seccomp.ARCHES[ARCH].clear()
            seccomp.ARCHES[ARCH].update(saved)
    return apply


def lock(folders):
    def apply():
        ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)  # no_new_privs, which Landlock needs
        landlock.restrict_writes(folders)
    return apply


def noexec_nodes():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        raise OSError(ctypes.get_errno(), "unshare")
    libc.mount(None, b"/", None, 0x40000 | 0x4000, None)  # MS_PRIVATE | MS_REC
    for node in glob.glob("/dev/nvidia*"):
        if os.path.isdir(node):
            continue
        p = node.encode()
        if libc.mount(p, p, None, 0x1000, None) != 0:  # MS_BIND
            raise OSError(ctypes.get_errno(), f"bind {node}")
        if libc.mount(None, p, None, 0x1000 | 0x20 | 0x8 | 0x2, None) != 0:  # REMOUNT|BIND|NOEXEC|NOSUID
            raise OSError(ctypes.get_errno(), f"remount {node}")


def own_net_ipc():
    if ctypes.CDLL(None, use_errno=True).unshare(0x40000000 | 0x08000000) != 0:  # CLONE_NEWNET | CLONE_NEWIPC
        raise OSError(ctypes.get_errno(), "unshare")


def case(name, *steps):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            for s in steps:
                s()
            import torch

            torch.cuda.init()
            x = torch.ones(1024, device="cuda") * 2
            out = {"case": name, "ok": float(x.sum()) == 2048.0}
        except BaseException as e:  # noqa: BLE001
            out = {"case": name, "ok": False, "error": f"{type(e).__name__}: {e}"[:300],
                   "where": traceback.format_exc().splitlines()[-3:-1]}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    print(data.decode() or json.dumps({"case": name, "ok": False, "error": "child died"}), flush=True)


if __name__ == "__main__":
    import torch  # noqa: F401  (imported once, CUDA not initialised, as in the fork server; children inherit it)

    print(json.dumps({"arch": ARCH, "landlock": landlock.available() or "yes", "python": sys.version.split()[0],
                      "nodes": sorted(glob.glob("/dev/nvidia*"))}), flush=True)
    cases = [
        ("nothing",),
        ("seccomp base", filt()),
        ("seccomp exec_guard", filt(exec_guard=True)),
        ("seccomp exec_guard + no_processes", filt(exec_guard=True, no_processes=True)),
        ("seccomp base + no_processes", filt(no_processes=True)),
        ("exec_guard without memfd rule", filt(exec_guard=True, off=("memfd_create",))),
        ("exec_guard without mmap rule", filt(exec_guard=True, off=("mmap",))),
        ("exec_guard without mprotect rules", filt(exec_guard=True, off=("mprotect", "pkey_mprotect"))),
        ("landlock /tmp /dev/shm", lock(["/tmp", "/dev/shm"])),
        ("landlock /tmp /dev", lock(["/tmp", "/dev"])),
        ("noexec device nodes", noexec_nodes),
        ("own network and IPC namespaces", own_net_ipc),
        ("all of them", noexec_nodes, own_net_ipc, lock(["/tmp", "/dev"]), filt(exec_guard=True, no_processes=True)),
        ("all but noexec nodes", own_net_ipc, lock(["/tmp", "/dev"]), filt(exec_guard=True, no_processes=True)),
        ("all but the exec_guard rules", noexec_nodes, own_net_ipc, lock(["/tmp", "/dev"]), filt(no_processes=True)),
        ("all but no_processes", noexec_nodes, own_net_ipc, lock(["/tmp", "/dev"]), filt(exec_guard=True)),
        ("landlock /", lock(["/"])),
        ("landlock /tmp /dev /proc", lock(["/tmp", "/dev", "/proc"])),
        ("landlock /tmp /dev /sys", lock(["/tmp", "/dev", "/sys"])),
        ("landlock /tmp /dev /proc /sys", lock(["/tmp", "/dev", "/proc", "/sys"])),
        ("landlock /tmp /dev /root /var /run /home", lock(["/tmp", "/dev", "/root", "/var", "/run", "/home"])),
    ]
    only = sys.argv[1:]  # case names: run only these
    for name, *steps in cases:
        if not only or name in only:
            case(name, *steps)
