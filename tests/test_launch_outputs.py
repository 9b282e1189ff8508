"""Returned outputs a kernel never wrote, or wrote only in part, warn at its def line
(UnwrittenOutputWarning), in functional and timing-only runs (never written) alike."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import UnwrittenOutputWarning

A = np.ones((128, 64), np.float32)


def never(a):
    return nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)


def half(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[:, 0:32], value=nl.load(a[:, 0:32]))
    return out


def whole(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out


@pytest.mark.parametrize("functional", [True, False])
def test_never_written_output_warns(functional: bool) -> None:
    line = never.__code__.co_firstlineno
    with pytest.warns(UnwrittenOutputWarning,
                      match=rf"test_launch_outputs.py:{line}: kernel return value hbm\d+ .* is "
                            r"never written"):
        ncs.simulate(never, A, functional=functional)


def test_partly_written_output_warns_with_the_count() -> None:
    with pytest.warns(UnwrittenOutputWarning, match="written only in part: 4096 of its 8192"):
        ncs.simulate(half, A)


def test_fully_written_output_is_quiet() -> None:
    np.testing.assert_array_equal(ncs.simulate(whole, A).outputs[0], A)  # (warnings are errors)
