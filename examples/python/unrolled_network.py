"""A two-layer unrolled reconstruction network trained on the phantom with mri.torch
(docs/python.md, "PyTorch"): each layer is a gradient step on the data term through the SDK's
NUFFT, x <- x - step A^H (A x - y), followed by a small learned CNN correction; the loss is the
mean squared error to the phantom. python3 unrolled_network.py [STEPS]
"""
import sys

import numpy as np
import torch

import mri
import mri.torch


class Layer(torch.nn.Module):
    def __init__(self, normal_scale):
        super().__init__()
        self.normal_scale = normal_scale  # the step is alpha / L, alpha learned: Adam moves it in units of 1/L
        self.alpha = torch.nn.Parameter(torch.tensor(1.0))
        self.cnn = torch.nn.Sequential(torch.nn.Conv2d(2, 16, 3, padding=1), torch.nn.ReLU(),
                                       torch.nn.Conv2d(16, 2, 3, padding=1))

    def forward(self, x, op, y):
        x = x - (self.alpha / self.normal_scale) * op.adjoint(op(x) - y)  # data consistency: gradient of 0.5 ||A x - y||^2
        channels = torch.stack([x.real, x.imag])[None]  # (1, 2, nx, ny)
        correction = self.cnn(channels)[0]
        return x + torch.complex(correction[0], correction[1])


class Unrolled(torch.nn.Module):
    def __init__(self, normal_scale, layers=2):
        super().__init__()
        self.layers = torch.nn.ModuleList(Layer(normal_scale) for _ in range(layers))

    def forward(self, op, y):
        x = op.adjoint(y) * 0  # start from zero
        for layer in self.layers:
            x = layer(x, op, y)
        return x


def main(steps=3):
    matrix = (64, 64)
    points = mri.traj.radial(matrix, 48, 128, golden=True)
    op = mri.torch.LinearOp(mri.NufftOperator(points, matrix, tolerance=1e-3))
    truth = torch.from_numpy(np.ascontiguousarray(mri.phantom(matrix)))
    y = torch.from_numpy(mri.add_noise(mri.phantom_kspace(points, matrix), snr=30, seed=1))
    # Largest eigenvalue of A^H A by power iteration: the scale of a stable gradient step.
    v = torch.randn(matrix, dtype=torch.complex64)
    for _ in range(10):
        v = op.normal(v)
        scale = torch.linalg.norm(v).item()
        v = v / scale
    net = Unrolled(scale)
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        optimiser.zero_grad()
        x = net(op, y)
        loss = torch.mean(torch.abs(x - truth) ** 2)
        loss.backward()  # through the CNNs and, by the adjoint, through the NUFFT
        optimiser.step()
        losses.append(loss.item())
        print(f"step {step}: loss {loss.item():.5f}")
    return losses


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
