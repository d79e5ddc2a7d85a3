import torch
import torch.nn as nn


class Model(nn.Module):
    """Sums two linear projections of two different inputs, then applies ReLU."""

    def __init__(self, x_features, y_features, out_features):
        super().__init__()
        self.from_x = nn.Linear(x_features, out_features)
        self.from_y = nn.Linear(y_features, out_features, bias=False)

    def forward(self, x, y):
        return torch.relu(self.from_x(x) + self.from_y(y))


batch_size = 4096
x_features = 1024
y_features = 512
out_features = 1024


def get_inputs():
    return [torch.randn(batch_size, x_features), torch.randn(batch_size, y_features)]


def get_init_inputs():
    return [x_features, y_features, out_features]
