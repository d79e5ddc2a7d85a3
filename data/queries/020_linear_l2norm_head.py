import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Projection head: linear layer without bias, then L2-normalise each output row."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x):
        return F.normalize(self.proj(x), p=2.0, dim=-1, eps=1e-8)


batch_size = 8192
in_features = 1024
out_features = 512


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
