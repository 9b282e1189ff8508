"""A [P] tile is NKI's [P, 1]: ``t[:, 0]`` / ``t[:, 0:1]`` index its implicit size-1 free axis
(AWS's flash attention passes ``l_buffer[:, i]`` to a helper that writes ``l_buffer[:, 0]``)."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import AccessError


def _update(m, column):
    """Writes through the [P] view it is given, as a [P, 1] slot."""
    e = nisa.activation(nl.exp, m, bias=column[:, 0], scale=-1.0)
    column[:, 0:1] = nl.add(m, e)


@nki.jit
def columns(a):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    m = nl.load(a[:, 0:1])
    for i in nl.static_range(a.shape[1]):
        _update(m, t[:, i])
    nl.store(out, t)
    return out


@nki.jit
def past_the_unit_axis(a):
    t = nl.load(a)
    col = t[:, 1]
    nl.add(col[:, 1], 1.0)  # BAD: the implicit free axis has size 1
    return None


def test_a_column_view_indexes_as_p_by_1() -> None:
    a = np.random.default_rng(0).random((128, 4)).astype(np.float32)
    out = ncs.simulate(columns, a).outputs[0]
    m = a[:, 0:1]
    np.testing.assert_allclose(out, m + np.exp(-m + a), rtol=1e-6)


def test_only_the_single_element_of_the_unit_axis() -> None:
    with pytest.raises(AccessError, match=r"test_unit_free_axis.py:\d+: indexing: expected at most"):
        ncs.simulate(past_the_unit_axis, np.zeros((128, 4), np.float32))
