import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales attention scores per head and adds a large negative bias at masked-out key positions."""

    def __init__(self):
        super().__init__()

    def forward(self, scores, head_scale, key_mask):
        scaled = scores * head_scale.view(1, -1, 1, 1)
        return scaled + (1.0 - key_mask) * -10000.0


batch_size = 64
num_heads = 64
query_len = 64
key_len = 128


def get_inputs():
    scores = torch.randn(batch_size, num_heads, query_len, key_len)
    head_scale = torch.rand(num_heads) + 0.5
    key_mask = torch.randint(0, 2, (batch_size, 1, 1, key_len)).float()
    return [scores, head_scale, key_mask]


def get_init_inputs():
    return []
