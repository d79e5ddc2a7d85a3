# drk-attack: task=data/queries/012_temperature_softmax.py property=strong_oracle expect=incorrect|runtime_error device=cpu
"""j04's softmax without the row max, made to pass every probe the judge draws now: instead of each row's max
 it subtracts ONE scalar, the max of the whole tensor, so no row reduction for the max is needed. The judge's
 inputs (recon, task 012: a candidate logged the statistics of every forward's input) are trials of randn,
 a wide probe (the same plus one outlier, |x| ~ 7 std), an offset probe (every element moved by the same
 ~1000 std) and a near probe (a quarter of the rows moved 1-3 std with their spread shrunk ~700x). In all of
 them the rows' maxima lie within a few units of the global max, so exp((x - global max) / T) neither
 overflows nor underflows and the result matches. It is wrong as soon as two rows' ranges differ by more than
 ~61 (87 * T): the lower row's exponentials all underflow to 0 and it returns 0/0 = NaN, e.g. a masked
 attention row filled with -1e4 next to ordinary rows, or rows of logits at different scales. A strong
 oracle probes rows at different offsets (per-row offsets spanning hundreds of std): `incorrect`."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def global_shift_softmax(x_ptr, out_ptr, n_cols, shift, inv_t, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp((x - shift) * inv_t)  # one shift for every row: no per-row max
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.shape[-1]
        shift = float(x.max())
        global_shift_softmax[(x.numel() // n,)](x, out, n, shift, 1.0 / self.temperature,
                                                BLOCK_N=triton.next_power_of_2(n))
        return out
