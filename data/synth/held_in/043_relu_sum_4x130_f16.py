# drk-synth: op=relu kind=sum
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu of each element, then sum over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.relu(x)
        return y.sum(dim=-1)


rows = 4
cols = 130


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return []
