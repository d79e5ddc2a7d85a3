# drk-synth: op=negpart kind=sum
import torch
import torch.nn as nn


class Model(nn.Module):
    """negpart of each element, then sum over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.clamp(x, max=0.0)
        return y.sum(dim=-1)


rows = 4
cols = 100


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
