"""torch CPU tensors as kernel arguments: converted to numpy (bf16 through ml_dtypes), results
back as torch tensors, output arguments updated in place. Skipped where torch is missing."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim import nki
from neuroncore_sim.errors import KernelError

torch = pytest.importorskip("torch", reason='torch is not installed; pip install ".[torch]"')


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


@nki.jit
def scale_into(a, out):
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))


def test_return_style_kernel_gives_torch_results():
    a, b = torch.randn(128, 64), torch.randn(128, 64)
    out = add_kernel(a, b)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    torch.testing.assert_close(out, a + b)
    out = nki.simulate_kernel(add_kernel, a, b)
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, a + b)


def test_bfloat16_round_trips_bit_exactly():
    a = torch.randn(64, 32).to(torch.bfloat16)
    z = torch.zeros(64, 32, dtype=torch.bfloat16)
    out = add_kernel(a, z)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, a)


def test_output_argument_tensor_is_updated_in_place():
    a = torch.randn(32, 16)
    out = torch.zeros(32, 16)
    returned = scale_into(a, out)
    torch.testing.assert_close(out, a * 2)
    assert returned is out


def test_simulate_accepts_torch_and_keeps_numpy_outputs():
    a, b = torch.ones(4, 8), torch.ones(4, 8)
    res = ncs.simulate(add_kernel, a, b)
    assert isinstance(res.outputs[0], np.ndarray)
    np.testing.assert_array_equal(res.outputs[0], np.full((4, 8), 2, np.float32))
    assert res.latency_ns > 0


def test_numpy_calls_stay_numpy():
    a = np.ones((4, 8), np.float32)
    assert isinstance(add_kernel(a, a), np.ndarray)


def test_tensor_without_numpy_dtype_is_a_kernel_error():
    a = torch.zeros(4, 4, dtype=torch.complex64)
    with pytest.raises(KernelError):
        add_kernel(a, a)
