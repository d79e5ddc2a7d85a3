import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes scale * tanh(x) + bias, with a learned per-feature bias over the last dimension."""

    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        return self.scale * torch.tanh(x) + self.bias


batch_size = 512
hidden = 16384


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden, 2.5]
