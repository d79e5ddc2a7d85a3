"""A degenerate task written for the corpus: the sum of a row after subtracting its mean is zero up to
rounding, so an all-zeros output passes a 1e-2 tolerance (KernelBench has tasks like this)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (x - x.mean(dim=1, keepdim=True)).sum(dim=1)


batch_size = 256
dim = 4096


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
