import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Leaky ReLU with a negative slope, capped from above at 6."""

    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.clamp(F.leaky_relu(x, self.negative_slope), max=6.0)


batch_size = 128
channels = 64
height = 64
width = 64


def get_inputs():
    return [4.0 * torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [0.05]
