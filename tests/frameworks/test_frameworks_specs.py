"""Output specs of a launch (frameworks/specs.py): found by a value-less trace, remembered per
kernel function for each argument signature, and never keeping a dropped kernel alive."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from neuroncore_sim.errors import KernelError
from neuroncore_sim.frameworks import specs
from neuroncore_sim.frontend import language as nl


def _make_kernel(calls: list[int]):
    def double_rows(a):
        calls.append(1)
        out = nl.ndarray((a.shape[0] * 2, a.shape[1]), a.dtype, buffer=nl.shared_hbm)
        nl.store(out[0:a.shape[0], :], nl.load(a))
        nl.store(out[a.shape[0]:2 * a.shape[0], :], nl.load(a))
        return out
    return double_rows


def test_specs_are_traced_once_per_signature():
    calls: list[int] = []
    kernel = _make_kernel(calls)
    a = specs.placeholder((8, 16), np.float32, "a")
    first = specs.output_specs(kernel, (a,), {}, ())
    again = specs.output_specs(kernel, (specs.placeholder((8, 16), np.float32, "a"),), {}, ())
    assert first == again == (specs.OutSpec((16, 16), np.dtype(np.float32)),)
    assert len(calls) == 1  # the second call was answered from the kernel's own table
    other = specs.output_specs(kernel, (specs.placeholder((4, 16), np.float32, "a"),), {}, ())
    assert other == (specs.OutSpec((8, 16), np.dtype(np.float32)),) and len(calls) == 2


def test_a_dropped_kernel_is_not_kept_alive():
    kernel = _make_kernel([])
    specs.output_specs(kernel, (specs.placeholder((8, 16), np.float32, "a"),), {}, ())
    ref = weakref.ref(kernel)
    del kernel
    gc.collect()
    assert ref() is None


def test_a_non_tensor_return_is_a_kernel_error():
    def returns_int(a):
        return 3

    with pytest.raises(KernelError, match="expected an HBM tensor, found int"):
        specs.output_specs(returns_int, (specs.placeholder((8, 16), np.float32, "a"),), {}, ())
