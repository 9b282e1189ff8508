"""ReLU on ScalarE over a 2-D grid of [128, 512] tiles, in bfloat16.

``nisa.activation`` runs the function in fp32 inside ScalarE and casts the result back to the
tile's dtype for free; ReLU of a bfloat16 value is exactly representable, so the result matches
numpy bit for bit.
"""

import ml_dtypes
import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

TILE_P = 128
TILE_F = 512


@nki.jit
def kernel(x):
    """Return ``max(x, 0)`` for an [R, C] HBM tensor, R % 128 == 0, C % 512 == 0."""
    n_rows, n_cols = x.shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    for i in nl.affine_range(n_rows // TILE_P):
        for j in nl.affine_range(n_cols // TILE_F):
            rows = nl.ds(i * TILE_P, TILE_P)
            cols = nl.ds(j * TILE_F, TILE_F)
            tile = nl.load(x[rows, cols])
            nl.store(y[rows, cols], value=nisa.activation(op=nl.relu, data=tile))
    return y


def reference(x):
    """numpy meaning of :func:`kernel`."""
    return np.maximum(x, np.zeros((), dtype=x.dtype))


def example_inputs():
    """A seeded bfloat16 [256, 1024] tensor."""
    rng = np.random.default_rng(7)
    return {"x": rng.standard_normal((256, 1024)).astype(ml_dtypes.bfloat16)}
