"""A seccomp filter for candidate processes: no new namespaces, no mounts, no BPF programs.

Rule: a candidate runs as an unprivileged uid, but the kernel still lets an unprivileged process create a
user namespace and become root *inside it*, with CAP_SYS_ADMIN over its own mounts and namespaces. Nothing a
kernel is asked to do on behalf of a candidate should need that, and it opens most of the kernel's
privileged code to the candidate (the usual first step of a kernel exploit). So the fork server installs,
in every candidate process before candidate code runs (after `no_new_privs`, which makes that allowed
without privilege), a classic-BPF filter that answers EPERM to:

- `unshare`, `setns`, and `clone` with any CLONE_NEW* flag or CLONE_PIDFD (threads and plain forks stay
  allowed);
- `clone3`, answered ENOSYS: its flags sit behind a pointer the filter cannot read, and the C library
  falls back to `clone`, which the filter can check;
- `mount`, `umount2`, `pivot_root` and the new mount API (`open_tree`, `move_mount`, `fsopen`, `fsconfig`,
  `fsmount`, `fspick`, `mount_setattr`), and `bpf`;
- the kernel's keyrings (`add_key`, `request_key`, `keyctl`): a key a candidate adds to its uid's persistent
  keyring outlives its processes and reaches the next candidate run under the same uid;
- `io_uring_setup`/`_enter`/`_register` (a second way into the kernel that the filter's list cannot see
  through), `ptrace` and `process_vm_readv`/`_writev` (no candidate needs another process's memory),
  `userfaultfd` (it fills pages whatever their protection, and widens kernel races);
- `setpriority`, `sched_setparam`, `sched_setscheduler`, `sched_setattr`: a candidate that lowers its own
  priority (nice 19, SCHED_IDLE) makes its main thread wait for a CPU behind its neighbours, which the
  judge's budget takes for host load and does not charge;
- `personality` other than the query: READ_IMPLIES_EXEC would make every readable mapping executable
  without PROT_EXEC ever being asked for, past the rules below; `shmat` with SHM_EXEC;
- with the exec guard (`drk.gym.sandbox.zygote.guard_exec`, which makes every writable folder noexec), no
  new machine code can be put in memory: `memfd_create` (a memory file lives on a mount of the kernel's own
  that no remount reaches, and MFD_NOEXEC_SEAL only removes its x bits: it still maps executable); `mmap`
  asking for PROT_EXEC together with PROT_WRITE, or for anonymous memory; `mprotect` and `pkey_mprotect`
  asking for PROT_EXEC. What is left executable is what the loader maps from read-only files; writing
  into those through /proc/self/mem is closed by `drk.gym.sandbox.landlock`. torch's CPU kernels that
  generate code at run time (oneDNN) are switched off in such a process; they fall back to ATen's own;
- with `no_processes` (every slot under the exec guard): `execve`, `execveat`, `fork`, `vfork` and `clone`
  without CLONE_THREAD, so no work can move into a process the evaluation does not watch and no other program
  runs. On CPU nothing legitimate starts one (Triton's interpreter compiles nothing); on CUDA Triton runs
  ptxas per kernel, through a helper process made before the filter (`drk.gym.sandbox.ptxas`);
- socket cookies (`getsockopt` SO_COOKIE, SO_NETNS_COOKIE) and netlink's socket-diagnostics family, whose
  dumps carry them: cookies come from one counter for the whole host, which a candidate moves by asking
  for them and the next reads back (attack n02);
- with the exec guard also `mlock`, `mlock2`, `mlockall` and `mmap` with MAP_LOCKED: the host-wide count of
  pages ever locked carried a message to the next candidate (attack n06); nothing a candidate runs needs
  locked memory on CPU, and CUDA slots, which may (pinned host memory), keep them with the guard off;
- the page cache's state as a reading: `posix_fadvise` DONTNEED (drops a shared file's cached pages),
  `preadv2` with RWF_NOWAIT (answers whether they are cached) and `cachestat`: with them a candidate wrote
  bits into which of torch's read-only headers the host keeps cached, and the next read them (attack p04);
  timing a read still tells a cached page from one on disk (docs/ARCHITECTURE.md, "What the sandbox does
  not separate");
- process descriptors (`pidfd_open`, `clone` with CLONE_PIDFD): since Linux 6.9 a pidfd's inode number
  comes from one counter that every new thread on the host advances, so a candidate that starts threads
  to a chosen count leaves a number the next one reads from its own pidfd (attack p07);
- `fallocate`, answered "not supported" (posix_fallocate then writes the blocks, which RLIMIT_FSIZE
  bounds): with FALLOC_FL_KEEP_SIZE it reserves disk blocks without growing the file, past the file-size
  limit, so a candidate could fill the host's disk through its own log file (attack m14);
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
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LOW, _OFF_ARG1_LOW, _OFF_ARG2_LOW, _OFF_ARG3_LOW = 0, 4, 16, 24, 32, 40
_OFF_ARG5_LOW = 56

CLONE_THREAD, CLONE_PIDFD = 0x00010000, 0x00001000
CLONE_NEW_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
X32_SYSCALL_BIT = 0x40000000
PROT_WRITE, PROT_EXEC = 0x2, 0x4
MAP_ANONYMOUS, MAP_LOCKED = 0x20, 0x2000  # the same on x86_64 and aarch64
SOL_SOCKET, SO_COOKIE, SO_NETNS_COOKIE = 1, 57, 71
AF_NETLINK, NETLINK_SOCK_DIAG = 16, 4
POSIX_FADV_DONTNEED, RWF_NOWAIT = 4, 0x8
SHM_EXEC = 0o100000
PERSONALITY_QUERY = 0xFFFFFFFF

# mount API and clone3 have the same numbers on every architecture (the unified table from 424 on)
_COMMON = {"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
           "mount_setattr": 442, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
           "pidfd_open": 434, "cachestat": 451}
ARCHES = {
    "x86_64": {"audit_arch": 0xC000003E, "clone": 56, "clone3": 435, "memfd_create": 319, "mmap": 9,
               "mprotect": 10, "pkey_mprotect": 329, "shmat": 30, "personality": 135, "fallocate": 285,
               "getsockopt": 55, "socket": 41, "lock": {"mlock": 149, "mlockall": 151, "mlock2": 325},
               "fadvise64": 221, "preadv2": 327,
               "spawn": {"fork": 57, "vfork": 58, "execve": 59, "execveat": 322},
               "deny": {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
                        "bpf": 321, "add_key": 248, "request_key": 249, "keyctl": 250, "ptrace": 101,
                        "userfaultfd": 323, "setpriority": 141, "sched_setparam": 142, "sched_setscheduler": 144,
                        "sched_setattr": 314,
                        "process_vm_readv": 310, "process_vm_writev": 311, **_COMMON}},
    "aarch64": {"audit_arch": 0xC00000B7, "clone": 220, "clone3": 435, "memfd_create": 279, "mmap": 222,
                "mprotect": 226, "pkey_mprotect": 288, "shmat": 196, "personality": 92, "fallocate": 47,
                "getsockopt": 209, "socket": 198, "lock": {"mlock": 228, "mlockall": 230, "mlock2": 284},
                "fadvise64": 223, "preadv2": 286,
                "spawn": {"execve": 221, "execveat": 281},
                "deny": {"unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "bpf": 280,
                         "add_key": 217, "request_key": 218, "keyctl": 219, "ptrace": 117, "userfaultfd": 282,
                         "setpriority": 140, "sched_setparam": 118, "sched_setscheduler": 119, "sched_setattr": 274,
                         "process_vm_readv": 270, "process_vm_writev": 271, **_COMMON}},
}


def program(arch: str, exec_guard: bool = False, no_processes: bool = False) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions for `arch` (a key of ARCHES); `exec_guard` adds the
    rules against new machine code in memory, `no_processes` those against new processes and programs."""
    a = ARCHES[arch]
    deny_nrs = sorted(a["deny"].values())
    # layout: [arch check][load nr][x32 check][one jeq per denied nr][one jeq per checked nr] allow, then one
    # block per checked call that loads an argument and allows or denies; jumps are offsets from the next
    # instruction, resolved below (classic BPF jumps only forward: every target comes later)
    body: list[tuple] = [("ld", _OFF_ARCH), ("jeq", a["audit_arch"], None, "deny"), ("ld", _OFF_NR),
                         ("jge", X32_SYSCALL_BIT, "deny", None)]
    body += [("jeq", nr, "deny", None) for nr in deny_nrs]
    if no_processes:
        body += [("jeq", nr, "deny", None) for nr in sorted(a["spawn"].values())]
    if exec_guard:
        body += [("jeq", a["memfd_create"], "deny", None), ("jeq", a["mmap"], "mmap", None),
                 ("jeq", a["mprotect"], "mprotect", None), ("jeq", a["pkey_mprotect"], "mprotect", None)]
        body += [("jeq", nr, "deny", None) for nr in sorted(a["lock"].values())]
    body += [("jeq", a["getsockopt"], "getsockopt", None), ("jeq", a["socket"], "socket", None),
             ("jeq", a["fadvise64"], "fadvise", None), ("jeq", a["preadv2"], "preadv2", None)]
    body += [("jeq", a["shmat"], "shmat", None), ("jeq", a["personality"], "personality", None),
             ("jeq", a["clone3"], "enosys", None), ("jeq", a["fallocate"], "eopnotsupp", None),
             ("jeq", a["clone"], "clone", None), ("ret", RET_ALLOW),
             ("label", "clone"), ("ld", _OFF_ARG0_LOW),
             ("jset", CLONE_NEW_FLAGS | CLONE_PIDFD, "deny", "allow" if not no_processes else None)]
    if no_processes:  # a thread shares the process (CLONE_THREAD); anything else is a new process
        body += [("jset", CLONE_THREAD, "allow", "deny")]
    body += [("label", "getsockopt"), ("ld", _OFF_ARG1_LOW), ("jeq", SOL_SOCKET, None, "allow"),
             ("ld", _OFF_ARG2_LOW), ("jeq", SO_COOKIE, "deny", None), ("jeq", SO_NETNS_COOKIE, "deny", "allow"),
             ("label", "socket"), ("ld", _OFF_ARG0_LOW), ("jeq", AF_NETLINK, None, "allow"),
             ("ld", _OFF_ARG2_LOW), ("jeq", NETLINK_SOCK_DIAG, "deny", "allow"),
             ("label", "fadvise"), ("ld", _OFF_ARG3_LOW), ("jeq", POSIX_FADV_DONTNEED, "deny", "allow"),
             ("label", "preadv2"), ("ld", _OFF_ARG5_LOW), ("jset", RWF_NOWAIT, "deny", "allow")]
    body += [("label", "shmat"), ("ld", _OFF_ARG2_LOW), ("jset", SHM_EXEC, "deny", "allow"),
             ("label", "personality"), ("ld", _OFF_ARG0_LOW), ("jeq", PERSONALITY_QUERY, "allow", "deny")]
    if exec_guard:
        body += [("label", "mmap"), ("ld", _OFF_ARG3_LOW), ("jset", MAP_LOCKED, "deny", None),
                 ("ld", _OFF_ARG2_LOW), ("jset", PROT_EXEC, None, "allow"),
                 ("jset", PROT_WRITE, "deny", None), ("ld", _OFF_ARG3_LOW), ("jset", MAP_ANONYMOUS, "deny", "allow"),
                 ("label", "mprotect"), ("ld", _OFF_ARG2_LOW), ("jset", PROT_EXEC, "deny", "allow")]
    body += [("label", "allow"), ("ret", RET_ALLOW), ("label", "deny"), ("ret", RET_ERRNO | errno.EPERM),
             ("label", "enosys"), ("ret", RET_ERRNO | errno.ENOSYS),
             ("label", "eopnotsupp"), ("ret", RET_ERRNO | errno.EOPNOTSUPP)]
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


def install(exec_guard: bool = False, no_processes: bool = False) -> bool:
    """Install the filter on the calling thread (and everything it starts later). Sets `no_new_privs`.
    Returns False, installing nothing, on an architecture the filter has no table for; raises OSError when
    the kernel refuses the filter."""
    arch = native_arch()
    if arch is None:
        return False
    ins = program(arch, exec_guard, no_processes)
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
