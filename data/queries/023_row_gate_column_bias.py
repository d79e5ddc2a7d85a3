import torch
import torch.nn as nn


class Model(nn.Module):
    """(x + col_bias) * sigmoid(row_gate): a per-feature bias and a per-token gate broadcast over x."""

    def __init__(self):
        super().__init__()

    def forward(self, x, row_gate, col_bias):
        return (x + col_bias) * torch.sigmoid(row_gate)


batch_size = 64
seq_len = 256
hidden = 1024


def get_inputs():
    x = torch.randn(batch_size, seq_len, hidden)
    row_gate = torch.randn(batch_size, seq_len, 1) * 2.0
    col_bias = torch.randn(hidden)
    return [x, row_gate, col_bias]


def get_init_inputs():
    return []
