# drk-synth: op=abs kind=sum
import torch
import torch.nn as nn


class Model(nn.Module):
    """abs of each element, then sum over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.abs(x)
        return y.sum(dim=-1)


rows = 8
cols = 40


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
