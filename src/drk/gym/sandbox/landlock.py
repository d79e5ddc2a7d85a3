"""Landlock for candidate processes: files may be opened for writing only beneath the sandbox's writable folders.

Rule: with the exec guard, the only machine code a candidate process can run is what the loader mapped from
read-only files (`drk.gym.sandbox.seccomp` refuses every other way of making memory executable). One door
is left that no mount option or system-call filter closes: /proc/self/mem, which lets a process write into
its own read-only pages, executable ones included (the kernel's debugger interface), and so patch machine
code into a library it mapped. Landlock, the kernel's unprivileged access control, is told here that
writing files is allowed only beneath the given folders (the candidate's work folder, /tmp, /dev/shm and
/dev, whose devices a GPU needs); /proc is not among them, so /proc/self/mem (and every other /proc file)
opens read-only at most. The restriction is inherited by everything the process starts and cannot be lifted.

Landlock is in mainline Linux since 5.13 (the REFER right needed here since 5.19), but a kernel may be
built or booted without it; `available()` says why not, and the caller records that in every result instead
of pretending. System call numbers are those of the unified table (the same on x86_64 and aarch64).
"""
from __future__ import annotations

import ctypes
import os
import struct

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
ACCESS_FS_WRITE_FILE = 1 << 1
# Handled with it and granted in the same folders: a ruleset that does not handle REFER (ABI 2 on) refuses
# every rename or link across folders (EXDEV), which Triton's cache does with each kernel it compiles.
ACCESS_FS_REFER = 1 << 13
HANDLED = ACCESS_FS_WRITE_FILE | ACCESS_FS_REFER


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def available() -> str:
    """'' when this kernel enforces Landlock, else why not."""
    libc = _libc()
    abi = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    if abi < 1:
        return f"Landlock unavailable: {os.strerror(ctypes.get_errno())}"
    if abi < 2:
        return f"Landlock ABI {abi} has no REFER right (renames across folders would fail)"
    return ""


def restrict_writes(beneath: list[str]) -> None:
    """From now on this process (and what it starts) may open files for writing only beneath `beneath`
    (folders that do not exist are skipped). Needs `no_new_privs` set first. Raises OSError if the kernel
    refuses."""
    libc = _libc()
    attr = ctypes.create_string_buffer(struct.pack("=Q", HANDLED))
    ruleset = libc.syscall(SYS_CREATE_RULESET, attr, ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for folder in beneath:
            try:
                fd = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", HANDLED, fd))
                if libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), rule,
                                ctypes.c_uint32(0)) != 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule({folder}) failed")
            finally:
                os.close(fd)
        if libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
