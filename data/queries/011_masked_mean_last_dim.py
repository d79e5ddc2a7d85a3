import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean of x over the last dimension counting only positions where mask is 1 (0 for empty rows)."""

    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        total = (x * mask).sum(dim=-1)
        count = mask.sum(dim=-1).clamp(min=1.0)
        return total / count


batch_size = 64
seq_len = 64
length = 2048


def get_inputs():
    x = torch.randn(batch_size, seq_len, length)
    mask = torch.randint(0, 2, (batch_size, seq_len, length)).float()
    return [x, mask]


def get_init_inputs():
    return []
