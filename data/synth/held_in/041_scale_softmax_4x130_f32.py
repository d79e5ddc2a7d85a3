# drk-synth: op=scale kind=softmax
import torch
import torch.nn as nn


class Model(nn.Module):
    """scale of each element, then softmax over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x * 3.0
        return torch.softmax(y, dim=-1)


rows = 4
cols = 130


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
