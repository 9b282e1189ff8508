"""Row sums and column sums of one matrix, each the way the hardware prefers.

* Row sums reduce along the free axis, one row per partition: ``nl.sum(axis=1)`` on VectorE.
* Column sums reduce *across* partitions, which the Vector/Scalar engines cannot do (each lane
  sees only its own partition). TensorE can: ``nc_matmul(ones[K, 1], tile[K, F])`` computes
  ``ones.T @ tile``, the [1, F] sum over the K partitions. The row tiles accumulate into one PSUM
  tile (``+=``), so the whole column sum is a single accumulation group.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

PMAX = 128


@nki.jit
def kernel(x):
    """Return ``(row_sums [N, 1], col_sums [1, F])`` of an [N, F] float32 HBM tensor.

    N % 128 == 0 and F <= 512 (one PSUM bank holds the [1, F] accumulator).
    """
    n_rows, n_cols = x.shape
    row_sums = nl.ndarray((n_rows, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    col_sums = nl.ndarray((1, n_cols), dtype=x.dtype, buffer=nl.shared_hbm)

    ones = nl.ones((PMAX, 1), dtype=x.dtype)
    col_acc = nl.zeros((1, n_cols), nl.float32, buffer=nl.psum)

    for i in nl.affine_range(n_rows // PMAX):
        tile = nl.load(x[i * PMAX:(i + 1) * PMAX, :])
        nl.store(row_sums[i * PMAX:(i + 1) * PMAX, :], value=nl.sum(tile, axis=1, keepdims=True))
        col_acc += nisa.nc_matmul(ones, tile)

    nl.store(col_sums, value=nl.copy(col_acc, dtype=x.dtype))
    return row_sums, col_sums


def reference(x):
    """numpy meaning of :func:`kernel`."""
    z = x.astype(np.float64)
    return (z.sum(axis=1, keepdims=True).astype(x.dtype),
            z.sum(axis=0, keepdims=True).astype(x.dtype))


def example_inputs():
    """A seeded float32 [384, 512] tensor (three row tiles accumulate into the column sums)."""
    rng = np.random.default_rng(6)
    return {"x": rng.standard_normal((384, 512)).astype(np.float32)}
