# drk-synth: op=sigmoid kind=mean
import torch
import torch.nn as nn


class Model(nn.Module):
    """sigmoid of each element, then mean over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.sigmoid(x)
        return y.mean(dim=-1)


rows = 4
cols = 72


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
