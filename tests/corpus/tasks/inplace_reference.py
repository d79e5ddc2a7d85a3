"""A task written for the corpus whose reference changes its input in place (some KernelBench-style models
use in-place ops). The evaluator runs the reference on the inputs themselves, so it must notice the change
and give the candidate fresh inputs: a correct kernel that does not mutate must still pass."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        x.mul_(2.0)
        return x + 1.0


batch_size = 64
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
