import torch
import torch.nn as nn


class Model(nn.Module):
    """Square linear layer, ReLU, then adds the input back as a residual: x + relu(W x + b)."""

    def __init__(self, hidden):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        return x + torch.relu(self.proj(x))


num_tokens = 4096
hidden = 2048


def get_inputs():
    return [torch.randn(num_tokens, hidden)]


def get_init_inputs():
    return [hidden]
