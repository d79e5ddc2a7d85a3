import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mish activation written out: x * tanh(softplus(x))."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.tanh(F.softplus(x))


batch_size = 64
channels = 64
height = 64
width = 64


def get_inputs():
    return [3.0 * torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []
