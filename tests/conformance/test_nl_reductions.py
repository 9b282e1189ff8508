"""nki.language reductions (max, min, sum, prod, mean, var, all) and softmax / rms_norm.

The reference: ``axis`` is an int or a list of free axes (never the partition axis 0), the last
contiguous dims; ``keepdims`` (default False) keeps the reduced axes as size 1.
"""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import SimulatorError

from .helpers import apply, tile_result

RNG = np.random.default_rng(11)

REDUCE = {"max": np.max, "min": np.min, "sum": np.sum, "prod": np.prod, "mean": np.mean}


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [1, [1], [1, 2], 2])
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduction_axes_and_keepdims(name, axis, keepdims, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}"))
    x = RNG.uniform(0.5, 1.5, (8, 4, 6)).astype(np.float32)
    fn = getattr(nl, name)
    got = apply(lambda t: fn(t, axis=axis, keepdims=keepdims), x)
    ax = tuple(axis) if isinstance(axis, list) else axis
    want = REDUCE[name](x.astype(np.float64), axis=ax, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduction_default_keepdims_is_false(name, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}"))
    x = RNG.uniform(0.5, 1.5, (8, 6)).astype(np.float32)
    shape, dtype = tile_result(lambda t: getattr(nl, name)(t, axis=1), x)
    assert shape == (8,) and dtype == np.float32


@pytest.mark.parametrize("name", sorted(REDUCE) + ["all"])
def test_reduction_over_the_partition_axis_is_an_error(name, request):
    request.node.add_marker(pytest.mark.api(f"nki.language.{name}"))
    x = RNG.uniform(0.5, 1.5, (8, 6)).astype(np.float32)
    with pytest.raises(SimulatorError, match="axis|partition"):
        apply(lambda t: getattr(nl, name)(t, axis=0), x)


@pytest.mark.api("nki.language.var")
def test_var_is_population_variance():
    x = RNG.normal(size=(8, 16)).astype(np.float32)
    got = apply(lambda t: nl.var(t, axis=1), x)
    np.testing.assert_allclose(got.reshape(8), x.astype(np.float64).var(axis=1), rtol=1e-4)


@pytest.mark.api("nki.language.all")
def test_all():
    x = (RNG.uniform(size=(8, 6)) > 0.2).astype(np.float32)
    x[0] = 1
    got = apply(lambda t: nl.all(t, axis=1, keepdims=True), x)
    np.testing.assert_array_equal(got.astype(bool).reshape(8, 1), x.all(axis=1, keepdims=True))


@pytest.mark.api("nki.language.softmax")
def test_softmax_over_free_axis():
    x = RNG.normal(size=(8, 16)).astype(np.float32)
    got = apply(lambda t: nl.softmax(t, axis=1), x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.api("nki.language.rms_norm")
def test_rms_norm():
    x = RNG.normal(size=(8, 16)).astype(np.float32)
    w = RNG.normal(size=(1, 16)).astype(np.float32)
    got = apply(lambda t, wt: nl.rms_norm(t, wt, axis=1, n=16), x, w)
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.api("nki.language.max", "nki.language.subtract", "nki.language.divide",
                 "nki.language.sum", "nki.language.exp")
def test_per_partition_reduction_broadcasts_along_free_axes():
    # keepdims=False gives [P]: a per-partition value, broadcast along the free axes ([P, F]).
    x = RNG.normal(size=(16, 8)).astype(np.float32)

    def fn(t):
        e = nl.exp(nl.subtract(t, nl.max(t, axis=1)))
        return nl.divide(e, nl.sum(e, axis=1))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(apply(fn, x), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
