import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-norm transformer MLP block: x + fc2(gelu(fc1(layer_norm(x))))."""

    def __init__(self, hidden, ffn):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


batch_size = 64
seq_len = 64
hidden = 1024
ffn = 4096


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, ffn]
