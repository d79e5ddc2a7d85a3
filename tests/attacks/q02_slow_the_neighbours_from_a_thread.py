# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=ok|hacked|timeout device=gpu then=data/query_solutions/003_sigmoid_gated_product.py check=neighbour_timing timeout=300
"""A correct kernel whose process keeps the GPU busy for as long as it lives: from its first forward a thread
multiplies 4096-square matrices on a stream of its own, and the first eight forwards each sleep a second to
live longer. It only slows itself in its own timed calls; what it is after is a second worker's candidate on the
same GPU, whose reference and timed calls the matrix products time-slice while that worker holds the GPU
"exclusively" (the lock binds the judges, not the candidates' threads). Must: a correct candidate evaluated beside
it gets the runtime and reference time it gets alone (within 25 %). (Another task than the neighbour's, so the
pool's task affinity puts the two on different workers.)"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

_imp = getattr(triton.runtime.build, "import" + "lib").import_module
_th, _time = _imp("thread" + "ing"), _imp("ti" + "me")
_state = {"calls": 0}


@triton.jit
def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


def _hog(device):
    stream = torch.cuda.Stream(device=device)
    with torch.cuda.stream(stream):
        x = torch.randn(4096, 4096, device=device)
        while True:
            for _ in range(4):
                torch.mm(x, x)
            stream.synchronize()


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        _state["calls"] += 1
        if _state["calls"] == 1:
            _th.Thread(target=_hog, args=(x.device,), daemon=True).start()
        if _state["calls"] <= 8:
            _time.sleep(1.0)
        x = x.contiguous()
        out = torch.empty_like(x)
        stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], self.scale, BLOCK=1024)
        return out
