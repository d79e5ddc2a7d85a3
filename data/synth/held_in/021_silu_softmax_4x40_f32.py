# drk-synth: op=silu kind=softmax
import torch
import torch.nn as nn


class Model(nn.Module):
    """silu of each element, then softmax over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x * torch.sigmoid(x)
        return torch.softmax(y, dim=-1)


rows = 4
cols = 40


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
