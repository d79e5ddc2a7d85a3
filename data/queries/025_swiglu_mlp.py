import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gated MLP block (SwiGLU): down(silu(gate(x)) * up(x)), all projections without bias."""

    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


batch_size = 64
seq_len = 64
hidden = 1024
intermediate = 2816


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, intermediate]
