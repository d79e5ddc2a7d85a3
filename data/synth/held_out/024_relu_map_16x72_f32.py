# drk-synth: op=relu kind=map
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu of each element, then map over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.relu(x)
        return y


rows = 16
cols = 72


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
