import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm then ReLU: train mode normalises by the batch's statistics and updates the running ones, eval
    mode normalises by the running ones."""

    def __init__(self, features: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(x))


batch_size = 64
features = 128


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
