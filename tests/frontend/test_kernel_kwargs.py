"""Keyword arguments of nki.jit kernels belong to the kernel, even when named like a simulator
option (NKI's flash attention takes ``config=FlashConfig(...)``); ``simulate(...,
kernel_kwargs=...)`` passes such names through."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import neuroncore_sim as ncs
from neuroncore_sim import nki
import neuroncore_sim.nki.language as nl


@dataclass(frozen=True)
class Scale:
    factor: float


def _body(a, config=Scale(1.0), grid=0):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a) * config.factor + float(grid))
    return out


def test_jit_kernel_keywords_named_like_simulator_options():
    k = nki.jit(_body)
    a = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(k(a, config=Scale(3.0), grid=2), a * 3 + 2)
    np.testing.assert_array_equal(nki.simulate_kernel(k, a, config=Scale(2.0)), a * 2)
    res = ncs.simulate(_body, a, config="trn1", kernel_kwargs={"config": Scale(5.0)})
    np.testing.assert_array_equal(res.outputs[0], a * 5)
    assert res.latency_ns > 0
