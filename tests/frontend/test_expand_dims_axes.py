"""expand_dims takes a tuple / list of axes (the nl.expand_dims reference: "int or tuple/list
of ints"), placed as numpy places them; an empty tuple leaves the tile as it is."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import ShapeError

F32 = np.float32


def test_tuple_axes_make_a_row_sum_divide_its_rows():
    def kernel(x):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        s = nisa.tensor_reduce(np.add, t, axis=(1,))        # a [128] per-partition value
        s2 = s.expand_dims(tuple(range(s.ndim, t.ndim)))    # -> [128, 1]
        assert s2.shape == (128, 1) and nl.expand_dims(s2, ()).shape == (128, 1)
        assert nl.expand_dims(s2, [1, 3]).shape == (128, 1, 1, 1)
        nl.store(out, value=nl.divide(t, s2))
        return out

    x = np.random.default_rng(4).random((128, 64)).astype(F32) + 0.5
    out = ncs.simulate(kernel, x, timing=False).outputs[0]
    np.testing.assert_allclose(out, x / x.sum(axis=1, keepdims=True), rtol=1e-5)


def test_repeated_or_out_of_range_axes_are_a_shape_error():
    def kernel(x):
        nl.load(x).expand_dims((1, 1))  # BAD

    expect_error(ShapeError, r"expand_dims axis: expected distinct ints in -4..3, found \(1, 1\)",
                 kernel, np.zeros((128, 4), F32))
