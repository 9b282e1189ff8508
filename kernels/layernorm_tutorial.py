"""LayerNorm with a learned scale and shift, ``(x - mean) / sqrt(var + eps) * gamma + beta``,
in the two styles of the LayerNorm tutorial (our own code).

Rows sit on the partition axis (128 rows per tile), so the statistics are free-axis
reductions; ``gamma`` and ``beta`` ([1, F] rows) are loaded once onto one partition and
broadcast to 128 partitions (a TensorE matmul with a ones stationary), then reused by every
row tile.

* :func:`layernorm_v1` uses only ``nki.language`` calls: the mean, the mean of the squares, the
  variance as ``E[x^2] - mean^2``, ``nl.rsqrt``, then element-wise arithmetic; the compiler
  (here: the front end's engine policy) picks the instructions.
* :func:`layernorm_v2` computes the statistics with ``nisa.bn_stats`` on chunks of at most 512
  elements (``bn_stats_fmax``) and one ``nisa.bn_aggr``, and shifts and scales each row with a
  single two-operator ``nisa.tensor_scalar`` (subtract the mean, multiply by the reciprocal
  standard deviation), which costs one instruction instead of two.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

PMAX = 128
BN_FMAX = 512  # nl.tile_size.bn_stats_fmax
BN_STATS_WIDTH = 6  # statistics bn_stats writes per partition
BCAST_COLS = 512  # fp32 columns of one PSUM bank


def _params(x, gamma, beta):
    """Output tensor and gamma / beta broadcast to [128, F] tiles (loaded once)."""
    n_rows, n_cols = x.shape
    assert n_rows % PMAX == 0, "layernorm: the row count must be a multiple of 128"
    assert gamma.shape == beta.shape == (1, n_cols), "layernorm: gamma and beta must be [1, F]"
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((PMAX, n_cols), dtype=gamma.dtype)
    b = nl.ndarray((PMAX, n_cols), dtype=beta.dtype)
    # Broadcast 512 columns at a time: one PSUM bank per matmul, copied into the SBUF tiles.
    for c in nl.affine_range((n_cols + BCAST_COLS - 1) // BCAST_COLS):
        cols = slice(c * BCAST_COLS, min(n_cols, (c + 1) * BCAST_COLS))
        width = cols.stop - cols.start
        g[:, cols] = nl.load(gamma[:, cols]).broadcast_to((PMAX, width))
        b[:, cols] = nl.load(beta[:, cols]).broadcast_to((PMAX, width))
    return n_rows // PMAX, out, g, b


@nki.jit
def layernorm_v1(x, gamma, beta, eps=1e-5):
    """LayerNorm of an [N, F] fp32 tensor with nki.language calls only."""
    n_tiles, out, g, b = _params(x, gamma, beta)
    # The squares are consumed within an iteration: one buffer for all of them leaves SBUF to
    # the row tiles, so the next rows load while these are computed.
    squares = nl.ndarray((PMAX, x.shape[1]), dtype=x.dtype)
    for i in nl.affine_range(n_tiles):
        rows = slice(i * PMAX, (i + 1) * PMAX)
        tile = nl.load(x[rows, :])
        mean = nl.mean(tile, axis=1, keepdims=True)
        # One [128, F] result per line, and each step overwrites the row tile: at F = 8192 a
        # [128, F] fp32 tile is 32 KiB per partition, and SBUF holds 176 KiB.
        squares[...] = nl.square(tile)
        mean_sq = nl.mean(squares, axis=1, keepdims=True)
        inv_std = nl.rsqrt(mean_sq - mean * mean + eps)
        tile[...] = nl.subtract(tile, mean)
        tile[...] = nl.multiply(tile, inv_std)
        tile[...] = nl.multiply(tile, g)
        tile[...] = nl.add(tile, b)
        nl.store(out[rows, :], value=tile)
    return out


@nki.jit
def layernorm_v2(x, gamma, beta, eps=1e-5):
    """LayerNorm of an [N, F] fp32 tensor with bn_stats / bn_aggr and one two-op tensor_scalar
    (F <= 512 or a multiple of 512)."""
    n_tiles, out, g, b = _params(x, gamma, beta)
    n_cols = x.shape[1]
    chunk = min(n_cols, BN_FMAX)
    assert n_cols % chunk == 0, "layernorm_v2: F must be <= 512 or a multiple of 512"
    n_chunks = n_cols // chunk
    for i in nl.affine_range(n_tiles):
        rows = slice(i * PMAX, (i + 1) * PMAX)
        tile = nl.load(x[rows, :])
        stats = nl.ndarray((PMAX, BN_STATS_WIDTH * n_chunks), dtype=nl.float32)
        for c in nl.affine_range(n_chunks):
            stats[:, c * BN_STATS_WIDTH:(c + 1) * BN_STATS_WIDTH] = nisa.bn_stats(
                tile[:, c * chunk:(c + 1) * chunk])
        mean_var = nisa.bn_aggr(stats)  # [128, 2]: mean, variance
        inv_std = nl.rsqrt(mean_var[:, 1:2] + eps)
        tile[...] = nisa.tensor_scalar(tile, op0=nl.subtract, operand0=mean_var[:, 0:1],
                                       op1=nl.multiply, operand1=inv_std)
        tile[...] = nl.multiply(tile, g)
        tile[...] = nl.add(tile, b)
        nl.store(out[rows, :], value=tile)
    return out


KERNELS = {"layernorm_v1": layernorm_v1, "layernorm_v2": layernorm_v2}


def reference(x, gamma, beta, eps=1e-5):
    """float64 statistics, returned as x's dtype."""
    z = x.astype(np.float64)
    mean = z.mean(axis=1, keepdims=True)
    var = z.var(axis=1, keepdims=True)
    return ((z - mean) / np.sqrt(var + eps) * gamma + beta).astype(x.dtype)


def example_inputs(N=256, F=1024):
    """Seeded fp32 inputs with a non-zero row mean; two row tiles and two bn_stats chunks."""
    rng = np.random.default_rng(5)
    f32 = np.float32
    return {"x": (2.0 + rng.standard_normal((N, F))).astype(f32),
            "gamma": rng.random((1, F)).astype(f32),
            "beta": rng.standard_normal((1, F)).astype(f32)}
