"""examples/transformer_block_{jax,torch}.py: a transformer block whose layers run as NKI kernels,
forward and backward (under jax.jit; in torch autograd), matches the same block in the
framework's ops and profiles every layer; examples/kernelize_torch.py kernelizes a small model
with NKI layers (the Hugging Face kernels library) and prints its per-layer profile. The torch
ones are skipped without torch (and kernels), naming the extra to install."""

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
    assert out["worst"] < 1e-5  # docs/frameworks.md: "relative difference below 1e-5"
    session = out["session"]
    assert len(session.launches) == 33  # docs/frameworks.md: "(33 launches)"
    kernels = {k: n for k, n, _ in session.by_kernel()}
    assert kernels["matmul_single_tile.kernel"] == 27  # 9 forward, 18 backward
    assert {"rmsnorm.kernel", "softmax.kernel", "swiglu", "swiglu_bwd",
            "softmax_bwd"} <= set(kernels)
    layers = {k for k, _, _ in session.by_layer()}
    assert {"attn_norm", "attention", "mlp_norm", "mlp"} <= layers
    assert "per layer" in capsys.readouterr().out


def test_torch_transformer_block_example_matches_torch(capsys):
    pytest.importorskip("torch", reason='torch is not installed; pip install ".[torch]"')
    path = EXAMPLE.with_name("transformer_block_torch.py")
    spec = importlib.util.spec_from_file_location("transformer_block_torch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main()  # asserts loss and gradients against the torch-ops block itself
    layers = {k: n for k, n, _ in out["session"].by_layer()}
    # Backward launches carry the layer whose forward launched them: attention's 6 matmuls and
    # softmax forward, 12 matmuls and softmax_bwd backward; the MLP's 3 matmuls and SwiGLU
    # forward, 6 matmuls and swiglu_bwd backward. RMSNorm's backward is torch ops.
    assert layers == {"Block/attn_norm": 1, "Block/attention": 7 + 13,
                      "Block/mlp_norm": 1, "Block/mlp": 4 + 7}
    backward = [r for r in out["session"].launches if r.backward]
    assert len(backward) == 20 and "MatMulBackward" not in layers
    assert "per layer" in capsys.readouterr().out


def test_kernelize_example_maps_layers_and_prints_the_profile(capsys, monkeypatch):
    pytest.importorskip("torch", reason='torch is not installed; pip install ".[torch,kernels]"')
    lib = pytest.importorskip("kernels", reason='kernels is not installed; '
                                                'pip install ".[torch,kernels]"')
    if not hasattr(lib, "kernelize"):  # this repository's kernels/ folder, not the library
        pytest.skip('kernels is not installed; pip install ".[torch,kernels]"')
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = EXAMPLE.with_name("kernelize_torch.py")
    spec = importlib.util.spec_from_file_location("kernelize_torch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main()  # asserts output and input gradient against the model in torch ops
    assert out["worst"] < 1e-4
    kernels = {k: n for k, n, _ in out["session"].by_kernel()}
    assert kernels == {"rms_norm": 2, "silu_and_mul": 1, "rms_norm_bwd": 2,
                       "silu_and_mul_bwd": 1}
    layers = {k: n for k, n, _ in out["session"].by_layer()}
    assert layers == {"MLP/norm": 2, "MLP/act": 2, "MLP/out_norm": 2}  # forward and backward
    assert [r.backward for r in out["session"].launches] == [False] * 3 + [True] * 3
    printed = capsys.readouterr().out
    assert "per layer" in printed and "match torch ops" in printed
