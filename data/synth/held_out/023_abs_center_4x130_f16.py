# drk-synth: op=abs kind=center
import torch
import torch.nn as nn


class Model(nn.Module):
    """abs of each element, then center over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.abs(x)
        return y - y.mean(dim=-1, keepdim=True)


rows = 4
cols = 130


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return []
