"""examples/transformer_block_{jax,torch}.py: a transformer block whose layers run as NKI kernels,
forward and backward (under jax.jit; in torch autograd), matches the same block in the
framework's ops and profiles every layer. The torch one is skipped without torch."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "transformer_block_jax.py"


def test_transformer_block_example_matches_jax_and_profiles_layers(capsys):
    pytest.importorskip("jax")
    spec = importlib.util.spec_from_file_location("transformer_block_jax", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main()  # asserts loss and gradients against the jax-ops block itself
    assert out["worst"] < 1e-3
    session = out["session"]
    kernels = {k: n for k, n, _ in session.by_kernel()}
    assert kernels["matmul_single_tile.kernel"] == 27  # 9 forward, 18 backward
    assert {"rmsnorm.kernel", "softmax.kernel", "swiglu", "swiglu_bwd",
            "softmax_bwd"} <= set(kernels)
    layers = {k for k, _, _ in session.by_layer()}
    assert {"attn_norm", "attention", "mlp_norm", "mlp"} <= layers
    assert "per layer" in capsys.readouterr().out


def test_torch_transformer_block_example_matches_torch(capsys):
    pytest.importorskip("torch")
    path = EXAMPLE.with_name("transformer_block_torch.py")
    spec = importlib.util.spec_from_file_location("transformer_block_torch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main()  # asserts loss and gradients against the torch-ops block itself
    layers = {k: n for k, n, _ in out["session"].by_layer()}
    assert layers["Block/attention"] == 7 and layers["MatMulBackward"] == 18
    assert "per layer" in capsys.readouterr().out
