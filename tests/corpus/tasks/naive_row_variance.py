"""A task whose own reference is ill-conditioned far from zero: the one-pass variance E[x^2] - E[x]^2 in
float32. On inputs shifted by a large constant the reference itself loses its digits, so a kernel that
computes the same formula in another order must not be blamed (the offset probe has no evidence there)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (x * x).mean(dim=1) - x.mean(dim=1) ** 2


rows = 64
cols = 256


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
