"""Kernelize a small PyTorch model with NKI layers and print its per-layer profile.

The model is an MLP whose activation and normalisation layers are declared with the Hugging
Face ``kernels`` library's ``@use_kernel_forward_from_hub``. The example writes a local layer
repository from examples/kernelize_layers.py (NKI forward and backward kernels), maps the layer
names to it, ``kernelize``s the model for training, runs one forward and backward pass inside a
profile session, checks output and gradients against the same model in torch ops, and prints
the launches with their layers and estimated device times.

    pip install ".[torch,kernels]"
    HF_HUB_OFFLINE=1 python examples/kernelize_torch.py

No hub is needed (the repository is local): set HF_HUB_OFFLINE=1.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from kernels import (LocalLayerRepository, Mode, kernelize, use_kernel_forward_from_hub,
                     use_kernel_mapping)

import neuroncore_sim as ncs
from neuroncore_sim.frameworks import write_layer_repository

LAYERS = Path(__file__).with_name("kernelize_layers.py")
TOKENS, WIDTH = 256, 64  # 2 sequences of 128 tokens


@use_kernel_forward_from_hub("SiluAndMul")
class SiluAndMul(torch.nn.Module):
    """silu(gate) * up, gate and up the two halves of the last dim."""

    def forward(self, x):
        d = x.shape[-1] // 2
        return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


@use_kernel_forward_from_hub("RMSNorm")
class RMSNorm(torch.nn.Module):
    """x / sqrt(mean(x**2) + 1e-6) over the last dim."""

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class MLP(torch.nn.Module):
    """norm -> up projection -> SiluAndMul -> down projection -> norm."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = RMSNorm()
        self.up = torch.nn.Linear(WIDTH, 4 * WIDTH)
        self.act = SiluAndMul()
        self.down = torch.nn.Linear(2 * WIDTH, WIDTH)
        self.out_norm = RMSNorm()

    def forward(self, x):
        return self.out_norm(self.down(self.act(self.up(self.norm(x)))))


def _run(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.detach().clone().requires_grad_()
    out = model(x)
    (out * out).sum().backward()
    return out.detach(), x.grad


def main() -> dict:
    """Kernelize, profile one training step, check it against torch ops; returns the session
    and the largest differences."""
    torch.manual_seed(0)
    reference = MLP()
    model = MLP()
    model.load_state_dict(reference.state_dict())
    x = torch.randn(2, TOKENS // 2, WIDTH)
    with tempfile.TemporaryDirectory() as tmp:
        repo = write_layer_repository(Path(tmp) / "nki-layers", LAYERS)
        mapping = {name: {"cpu": LocalLayerRepository(repo_path=repo, layer_name=name)}
                   for name in ("SiluAndMul", "RMSNorm")}
        with use_kernel_mapping(mapping):
            kernelize(model, device="cpu", mode=Mode.TRAINING)
        with ncs.profile_session(model=model) as session:
            out, grad = _run(model, x)
    want, want_grad = _run(reference, x)
    worst = max(float((out - want).abs().max()), float((grad - want_grad).abs().max()))
    assert worst < 1e-4, f"kernelized model differs from torch ops by {worst}"
    print(session.table())
    print(f"\noutput and input gradient match torch ops (largest difference {worst:.1e})")
    return {"session": session, "worst": worst}


if __name__ == "__main__":
    main()
