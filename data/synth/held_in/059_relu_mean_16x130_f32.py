# drk-synth: op=relu kind=mean
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu of each element, then mean over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.relu(x)
        return y.mean(dim=-1)


rows = 16
cols = 130


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
