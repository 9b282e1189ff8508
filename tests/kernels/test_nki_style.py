"""NKI-reference-style kernels (importing neuronxcc) run unmodified after the alias."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim import nki

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def examples():
    ncs.install_neuronxcc_alias()
    path = Path(__file__).parent / "nki_style" / "api_examples.py"
    spec = importlib.util.spec_from_file_location("nki_style_api_examples", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_activation_with_bias_and_scale(examples):
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    b = RNG.normal(size=(128, 1)).astype(np.float32)
    got = examples.scaled_exp_with_bias(x, b)
    np.testing.assert_allclose(got, np.exp(2 * x + b), rtol=1e-5)


def test_reduce_keepdims_via_simulate_kernel(examples):
    x = RNG.normal(size=(64, 100)).astype(np.float32)
    got = nki.simulate_kernel(examples.row_max_keepdims, x)
    np.testing.assert_array_equal(got, x.max(axis=1, keepdims=True))


def test_affine_select_causal_mask(examples):
    x = RNG.normal(size=(128, 128)).astype(np.float32)
    got = examples.causal_mask(x)
    np.testing.assert_array_equal(got, np.where(np.tri(128, dtype=bool), x, -9984.0))


def test_transposes_and_matmul_into_psum(examples):
    a = RNG.normal(size=(128, 96)).astype(np.float32)
    b = RNG.normal(size=(128, 256)).astype(np.float32)
    np.testing.assert_allclose(examples.transpose_then_matmul(a, b), a.T @ b, rtol=1e-4,
                               atol=1e-4)


def test_output_argument_kernel_with_dma_copy(examples):
    x = RNG.normal(size=(256, 64)).astype(np.float32)
    out = np.zeros_like(x)
    examples.dma_copy_rows(x, out)
    np.testing.assert_array_equal(out, x)
