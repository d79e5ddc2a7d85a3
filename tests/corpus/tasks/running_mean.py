import torch
import torch.nn as nn


class Model(nn.Module):
    """Subtracts a running mean (a buffer) that every call updates first, in train and eval mode alike: each
    call's output depends on the calls before it."""

    def __init__(self, features: int):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.running_mean.mul_(0.9).add_(0.1 * x.mean(0))
        return x - self.running_mean


batch_size = 256
features = 512


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
