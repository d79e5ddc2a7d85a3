# drk-synth: op=square kind=softmax
import torch
import torch.nn as nn


class Model(nn.Module):
    """square of each element, then softmax over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x * x
        return torch.softmax(y, dim=-1)


rows = 16
cols = 72


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return []
