# drk-synth: op=shift kind=sum
import torch
import torch.nn as nn


class Model(nn.Module):
    """shift of each element, then sum over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x + 1.0
        return y.sum(dim=-1)


rows = 16
cols = 100


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return []
