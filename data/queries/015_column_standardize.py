import torch
import torch.nn as nn


class Model(nn.Module):
    """Standardises each column over the batch dimension: (x - mean) / (std + eps), population std."""

    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        mean = x.mean(dim=0, keepdim=True)
        std = x.std(dim=0, keepdim=True, unbiased=False)
        return (x - mean) / (std + self.eps)


batch_size = 2048
features = 4096


def get_inputs():
    return [torch.rand(batch_size, features) * 4.0 - 1.0]


def get_init_inputs():
    return [1e-5]
