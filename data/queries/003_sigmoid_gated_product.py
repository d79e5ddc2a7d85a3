import torch
import torch.nn as nn


class Model(nn.Module):
    """Gates one tensor by the sigmoid of another of the same shape: a * sigmoid(b)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a * torch.sigmoid(b)


batch_size = 64
seq_len = 256
dim = 1024


def get_inputs():
    a = torch.randn(batch_size, seq_len, dim)
    b = torch.randn(batch_size, seq_len, dim)
    return [a, b]


def get_init_inputs():
    return []
