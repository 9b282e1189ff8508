"""Layer normalisation of each row, ``(x - mean) / sqrt(var + EPS)``, in two styles.

* :func:`layernorm_nl` uses only ``nki.language`` (``nl.mean`` and ``nl.var``); the compiler picks
  the instructions.
* :func:`layernorm_bn` uses the VectorE statistics instructions directly: ``nisa.bn_stats`` on
  each chunk of at most 512 elements (``bn_stats_fmax``) writes 6 statistics per partition into
  one SBUF tile, and a single ``nisa.bn_aggr`` folds them into the row's mean and variance. The
  normalisation itself is one ``tensor_scalar`` with two operators (subtract, then multiply),
  which costs the same as one.

Rows sit on the partition axis, so every statistic is a free-axis reduction.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

PMAX = 128
BN_FMAX = 512  # nl.tile_size.bn_stats_fmax: bn_stats reads at most 512 elements per partition
BN_STATS_WIDTH = 6  # bn_stats writes (count, mean, var*count) for the even and odd elements
EPS = 1e-5


@nki.jit
def layernorm_nl(x):
    """Normalise each row of an [N, F] HBM tensor (N % 128 == 0) with nl.mean / nl.var."""
    n_rows, n_cols = x.shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    for i in nl.affine_range(n_rows // PMAX):
        tile = nl.load(x[i * PMAX:(i + 1) * PMAX, :])
        mean = nl.mean(tile, axis=1, keepdims=True)
        var = nl.var(tile, axis=1, keepdims=True)
        inv_std = nl.rsqrt(nl.add(var, EPS))
        normed = nl.multiply(nl.subtract(tile, mean), inv_std)
        nl.store(y[i * PMAX:(i + 1) * PMAX, :], value=normed)
    return y


@nki.jit
def layernorm_bn(x):
    """Normalise each row of an [N, F] HBM tensor with bn_stats / bn_aggr.

    N % 128 == 0; F <= 512 or F a multiple of 512.
    """
    n_rows, n_cols = x.shape
    chunk = min(n_cols, BN_FMAX)
    assert n_cols % chunk == 0, "layernorm_bn: F must be <= 512 or a multiple of 512"
    n_chunks = n_cols // chunk
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    for i in nl.affine_range(n_rows // PMAX):
        tile = nl.load(x[i * PMAX:(i + 1) * PMAX, :])

        # All chunks' statistics side by side, so one bn_aggr sees the whole row.
        stats = nl.ndarray((PMAX, BN_STATS_WIDTH * n_chunks), dtype=nl.float32)
        for c in nl.affine_range(n_chunks):
            stats[:, c * BN_STATS_WIDTH:(c + 1) * BN_STATS_WIDTH] = nisa.bn_stats(
                tile[:, c * chunk:(c + 1) * chunk])
        mean_var = nisa.bn_aggr(stats)  # [PMAX, 2]: mean, variance

        inv_std = nl.rsqrt(nl.add(mean_var[:, 1:2], EPS))
        normed = nisa.tensor_scalar(tile, op0=nl.subtract, operand0=mean_var[:, 0:1],
                                    op1=nl.multiply, operand1=inv_std)
        nl.store(y[i * PMAX:(i + 1) * PMAX, :], value=normed)
    return y


KERNELS = {"layernorm_nl": layernorm_nl, "layernorm_bn": layernorm_bn}


def reference(x):
    """numpy meaning of both kernels (float64 statistics, returned as x's dtype)."""
    z = x.astype(np.float64)
    mean = z.mean(axis=1, keepdims=True)
    var = z.var(axis=1, keepdims=True)
    return ((z - mean) / np.sqrt(var + EPS)).astype(x.dtype)


def example_inputs(N=256, F=1024, dtype="float32"):
    """A seeded [N, F] tensor with a non-zero mean; the defaults give two row tiles and two
    bn_stats chunks per row. Both kernels take the same inputs, so they compare directly."""
    rng = np.random.default_rng(3)
    return {"x": (3.0 + 2.0 * rng.standard_normal((N, F))).astype(dtype)}
