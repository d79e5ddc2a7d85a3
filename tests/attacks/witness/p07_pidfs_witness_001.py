"""Witness follower for p07 (task 001_scaled_tanh_bias): a correct candidate that starts one thread at import,
reads the pidfs inode number of its pidfd (pidfd_open + fstat through libc: the host-wide count of struct pid
allocations) and fails with a runtime_error naming what it decoded when the value mod 8192 lies in
[32 * slot + 8, 32 * slot + 32) with slot = 16 * t + 5 (the low nibble of 'u') for a time t (seconds mod 16)
at most 5 s ago: an earlier candidate set the counter there. Alone it is ok (the pool's start between the
main batch and this pair moves the counter by far more; a random value matches with probability ~2 %)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)
_libc.time.restype = _ct.c_long


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


def _read(path):
    fd = _libc.open(path, 0)
    if fd < 0:
        return b""
    buf, data = _ct.create_string_buffer(65536), b""
    while True:
        n = _libc.read(fd, buf, 65536)
        if n <= 0:
            break
        data += buf.raw[:n]
    _libc.close(fd)
    return data
_threading = functools.reduce(getattr, ("multiprocessing", "reductions", "threading"), torch)
_libc.syscall.restype = _ct.c_long

M, W = 8192, 32   # 256 slots of 32 values: slot = 16 * (time mod 16) + nibble
PIDFD_OPEN, PIDFD_THREAD = 434, 0o200


class _Stat(_ct.Structure):
    _fields_ = [("dev", _ct.c_ulong), ("ino", _ct.c_ulong), ("pad", _ct.c_char * 128)]


def _fresh_pid_ino():
    """The pidfs inode number of a brand-new thread: the host-wide count of struct pid allocations."""
    out = []

    def probe():
        fd = _libc.syscall(PIDFD_OPEN, _threading.get_native_id(), PIDFD_THREAD)
        if fd >= 0:
            st = _Stat()
            _libc.fstat(int(fd), _ct.byref(st))
            _libc.close(int(fd))
            out.append(st.ino)
    t = _threading.Thread(target=probe)
    t.start()
    t.join()
    return out[0] if out else -1


def _decode():
    v = _fresh_pid_ino()
    if v < 0:
        return None
    r = v % M
    slot, off = r // W, r % W
    age = (_libc.time(None) - slot // 16) % 16
    if slot % 16 == (ord("u") & 15) and off >= 8 and age <= 5:
        return "pidfs inode %d: nibble %d, written %d s ago" % (v, slot % 16, age)
    return None


_FOUND = _decode()


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        if _FOUND:
            raise RuntimeError("an earlier candidate left a message in the host-wide pidfs inode counter: " + _FOUND)
        return stb(x, self.bias, self.scale)
