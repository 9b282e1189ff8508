"""Element-wise ``exp`` over a row count that is not a multiple of 128.

The rows are walked in [128, F] tiles; the last tile is only partly inside the tensor, so every
load, compute and store carries the mask ``row < n_rows``. On hardware a compile-time mask
shrinks the instruction to the valid partitions at no cost, and the rows past the end are never
read or written.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

PMAX = 128  # partitions per tile


@nki.jit
def kernel(x):
    """Return ``exp(x)`` for an [N, F] HBM tensor with any N and F <= 512."""
    n_rows, n_cols = x.shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    i_p = nl.arange(PMAX)[:, None]
    i_f = nl.arange(n_cols)[None, :]
    n_tiles = (n_rows + PMAX - 1) // PMAX  # round up: the last tile is ragged

    for i in nl.affine_range(n_tiles):
        rows = i * PMAX + i_p
        inside = rows < n_rows
        tile = nl.load(x[rows, i_f], mask=inside)
        result = nl.exp(tile, mask=inside)
        nl.store(y[rows, i_f], value=result, mask=inside)
    return y


def reference(x):
    """numpy meaning of :func:`kernel`."""
    return np.exp(x)


def example_inputs():
    """A seeded float32 [300, 256] tensor: two full tiles and one of 44 rows."""
    rng = np.random.default_rng(1)
    return {"x": rng.uniform(-4.0, 4.0, size=(300, 256)).astype(np.float32)}
