import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched attention logits q @ k^T / sqrt(d), soft-capped as cap * tanh(logits / cap)."""

    def __init__(self, cap):
        super().__init__()
        self.cap = cap

    def forward(self, q, k):
        logits = torch.bmm(q, k.transpose(1, 2)) * (q.shape[-1] ** -0.5)
        return self.cap * torch.tanh(logits / self.cap)


batch_size = 64
seq_len = 512
head_dim = 128


def get_inputs():
    q = torch.randn(batch_size, seq_len, head_dim)
    k = torch.randn(batch_size, seq_len, head_dim)
    return [q, k]


def get_init_inputs():
    return [3.0]
