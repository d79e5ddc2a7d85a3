"""A seccomp filter for candidate processes: no new namespaces, no mounts, no BPF programs.

Rule: a candidate runs as an unprivileged uid, but the kernel still lets an unprivileged process create a
user namespace and become root *inside it*, with CAP_SYS_ADMIN over its own mounts and namespaces. Nothing a
kernel is asked to do on behalf of a candidate should need that, and it opens most of the kernel's
privileged code to the candidate (the usual first step of a kernel exploit). So the fork server installs,
in every candidate process before candidate code runs (after `no_new_privs`, which makes that allowed
without privilege), a classic-BPF filter that answers EPERM to:

- `unshare`, `setns`, and `clone` with any CLONE_NEW* flag (threads and plain forks stay allowed);
- `clone3`, answered ENOSYS: its flags sit behind a pointer the filter cannot read, and the C library
  falls back to `clone`, which the filter can check;
- `mount`, `umount2`, `pivot_root` and the new mount API (`open_tree`, `move_mount`, `fsopen`, `fsconfig`,
  `fsmount`, `fspick`, `mount_setattr`), and `bpf`;
- with the exec guard (`drk.gym.sandbox.zygote.guard_exec`, which makes every writable folder noexec):
  `memfd_create` without MFD_NOEXEC_SEAL, whose memory file lives on a mount of the kernel's own that no
  remount reaches, so a shared object written into it could be loaded from /proc/self/fd;
- any system call made through another architecture's entry (32-bit x86 `int 0x80`, x32), whose numbers
  the filter's list does not cover.

The filter is written here because no library for it ships with the interpreter; it is a list of
numbers per architecture (x86_64 and aarch64). On another architecture `install` returns False and the
caller records that the filter is missing rather than pretending.
"""
from __future__ import annotations

import ctypes
import errno
import platform
import struct

# classic BPF
_LD_W_ABS = 0x20        # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15           # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35           # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45          # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06           # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (little-endian hosts)
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LOW, _OFF_ARG1_LOW = 0, 4, 16, 24

CLONE_NEW_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
X32_SYSCALL_BIT = 0x40000000
MFD_NOEXEC_SEAL = 0x0008

# mount API and clone3 have the same numbers on every architecture (the unified table from 424 on)
_COMMON = {"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
           "mount_setattr": 442}
ARCHES = {
    "x86_64": {"audit_arch": 0xC000003E, "clone": 56, "clone3": 435, "memfd_create": 319,
               "deny": {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
                        "bpf": 321, **_COMMON}},
    "aarch64": {"audit_arch": 0xC00000B7, "clone": 220, "clone3": 435, "memfd_create": 279,
                "deny": {"unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "bpf": 280,
                         **_COMMON}},
}


def program(arch: str, exec_guard: bool = False) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions for `arch` (a key of ARCHES); `exec_guard` adds the
    memfd_create rule."""
    a = ARCHES[arch]
    deny_nrs = sorted(a["deny"].values())
    # layout: [arch check][load nr][x32 check][one jeq per denied nr][clone3][clone] allow, flags check,
    # allow, EPERM, ENOSYS; jumps are offsets from the next instruction, resolved below
    body: list[tuple] = [("ld", _OFF_ARCH), ("jeq", a["audit_arch"], None, "deny"), ("ld", _OFF_NR),
                         ("jge", X32_SYSCALL_BIT, "deny", None)]
    body += [("jeq", nr, "deny", None) for nr in deny_nrs]
    if exec_guard:
        body += [("jeq", a["memfd_create"], "memfd", None)]
    body += [("jeq", a["clone3"], "enosys", None), ("jeq", a["clone"], "clone", None), ("ret", RET_ALLOW),
             ("label", "clone"), ("ld", _OFF_ARG0_LOW), ("jset", CLONE_NEW_FLAGS, "deny", None),
             ("ret", RET_ALLOW)]
    if exec_guard:  # allowed only sealed against execution
        body += [("label", "memfd"), ("ld", _OFF_ARG1_LOW), ("jset", MFD_NOEXEC_SEAL, "allow", "deny"),
                 ("label", "allow"), ("ret", RET_ALLOW)]
    body += [("label", "deny"), ("ret", RET_ERRNO | errno.EPERM),
             ("label", "enosys"), ("ret", RET_ERRNO | errno.ENOSYS)]
    labels, pos = {}, 0
    for ins in body:
        if ins[0] == "label":
            labels[ins[1]] = pos
        else:
            pos += 1
    out, pos = [], 0
    for ins in body:
        if ins[0] == "label":
            continue

        def off(target):
            return 0 if target is None else labels[target] - (pos + 1)

        if ins[0] == "ld":
            out.append((_LD_W_ABS, 0, 0, ins[1]))
        elif ins[0] == "ret":
            out.append((_RET_K, 0, 0, ins[1]))
        else:
            code = {"jeq": _JEQ_K, "jge": _JGE_K, "jset": _JSET_K}[ins[0]]
            jt, jf = off(ins[2]), off(ins[3])
            if not (0 <= jt < 256 and 0 <= jf < 256):
                raise ValueError("seccomp program too long for 8-bit jumps")
            out.append((code, jt, jf, ins[1]))
        pos += 1
    return out


def native_arch() -> str | None:
    m = platform.machine().lower()
    m = {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)
    return m if m in ARCHES else None


def install(exec_guard: bool = False) -> bool:
    """Install the filter on the calling thread (and everything it starts later). Sets `no_new_privs`.
    Returns False, installing nothing, on an architecture the filter has no table for; raises OSError when
    the kernel refuses the filter."""
    arch = native_arch()
    if arch is None:
        return False
    ins = program(arch, exec_guard)
    raw = b"".join(struct.pack("=HBBI", *i) for i in ins)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(len(ins), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) refused the candidate filter")
    return True
