"""Row-wise softmax written with ``nki.language`` operations only.

Each [128, F] tile holds 128 rows, one per partition, so the reductions run along the free axis
(VectorE) and never need data from another partition. The row maximum is subtracted before
``exp`` so large inputs do not overflow.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

PMAX = 128


@nki.jit
def kernel(x):
    """Return ``softmax(x, axis=1)`` for an [N, F] HBM tensor, N % 128 == 0, F <= 512."""
    n_rows, n_cols = x.shape
    probs = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    for i in nl.affine_range(n_rows // PMAX):
        logits = nl.load(x[i * PMAX:(i + 1) * PMAX, :])
        row_max = nl.max(logits, axis=1, keepdims=True)
        shifted = nl.exp(nl.subtract(logits, row_max))
        row_sum = nl.sum(shifted, axis=1, keepdims=True)
        nl.store(probs[i * PMAX:(i + 1) * PMAX, :], value=nl.divide(shifted, row_sum))
    return probs


def reference(x):
    """numpy meaning of :func:`kernel` (computed in float64, returned as x's dtype)."""
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


def example_inputs():
    """A seeded float32 [256, 512] tensor of logits."""
    rng = np.random.default_rng(2)
    return {"x": (3.0 * rng.standard_normal((256, 512))).astype(np.float32)}
