"""RMS normalisation of each row with a learned per-column weight.

``y = x / sqrt(mean(x**2) + EPS) * w``. The weight vector is loaded once as a [1, F] tile and
broadcast to all 128 partitions before the loop (``nl.broadcast_to``), because VectorE lanes
only see their own partition: a [1, F] operand cannot be combined with a [128, F] tile directly.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

PMAX = 128
EPS = 1e-6


@nki.jit
def kernel(x, w):
    """RMS-normalise an [N, F] HBM tensor (N % 128 == 0, F <= 512) and scale by w [1, F]."""
    n_rows, n_cols = x.shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    w_row = nl.load(w)
    w_all = nl.broadcast_to(w_row, shape=(PMAX, n_cols))

    for i in nl.affine_range(n_rows // PMAX):
        tile = nl.load(x[i * PMAX:(i + 1) * PMAX, :])
        sum_sq = nl.sum(nl.square(tile), axis=1, keepdims=True)
        mean_sq = nl.multiply(sum_sq, 1.0 / n_cols)
        inv_rms = nl.rsqrt(nl.add(mean_sq, EPS))
        scaled = nl.multiply(nl.multiply(tile, inv_rms), w_all)
        nl.store(y[i * PMAX:(i + 1) * PMAX, :], value=scaled)
    return y


def reference(x, w):
    """numpy meaning of :func:`kernel` (float64 inside, returned as x's dtype)."""
    z = x.astype(np.float64)
    inv_rms = 1.0 / np.sqrt((z * z).mean(axis=1, keepdims=True) + EPS)
    return (z * inv_rms * w.astype(np.float64)).astype(x.dtype)


def example_inputs():
    """Seeded float32 x [384, 512] and weight w [1, 512]."""
    rng = np.random.default_rng(4)
    return {
        "x": rng.standard_normal((384, 512)).astype(np.float32),
        "w": rng.uniform(0.5, 1.5, size=(1, 512)).astype(np.float32),
    }
