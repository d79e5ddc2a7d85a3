# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=compile_error device=any
import torch
import triton


class Model(torch.nn.Module):
    def forward(self, x):
        return x
