# drk-synth: op=scale kind=sum
import torch
import torch.nn as nn


class Model(nn.Module):
    """scale of each element, then sum over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x * 3.0
        return y.sum(dim=-1)


rows = 8
cols = 72


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
