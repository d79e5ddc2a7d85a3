# drk-synth: op=scale kind=map
import torch
import torch.nn as nn


class Model(nn.Module):
    """scale of each element, then map over each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x * 3.0
        return y


rows = 16
cols = 40


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return []
