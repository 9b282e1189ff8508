"""Scaling a tall, narrow tensor: the same DMAs, 128-byte rows versus 2 KiB rows per partition.

An element-wise operation does not care which element sits on which partition, but the DMA
engines do. A DMA moves one contiguous run per partition (one descriptor each) and every DMA
instruction pays a fixed latency (~1.3 us), so many small DMAs are slow. (The later DMA guide's
curve, 128 B per partition at ~5% of the bandwidth, is not what the trn1 matmul ladder shows:
there, loads cost their bytes down to 256 B rows; see docs/model.md.)

* :func:`row_per_partition` tiles the [R, 32] fp32 tensor the obvious way, one row per
  partition: each load and store moves 128 B per partition.
* :func:`rows_grouped` gives each partition ``ROWS_PER_PARTITION`` consecutive rows, which are
  contiguous in HBM: with the default 16, each partition's run is 16 x 128 B = 2 KiB, and one
  DMA moves 16 times the data for the same number of descriptors. ``ROWS_PER_PARTITION=1`` is
  the first kernel again; sweeping it traces the DMA efficiency curve.

Both compute ``x * SCALE`` with one VectorE instruction per tile, so the DMAs decide the time.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

PMAX = 128
SCALE = 0.5


@nki.jit
def row_per_partition(x):
    """``x * SCALE`` for an [R, C] HBM tensor (R % 128 == 0), one row per partition."""
    n_rows, n_cols = x.shape
    assert n_rows % PMAX == 0, "row_per_partition: expected R a multiple of 128"
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    for i in nl.affine_range(n_rows // PMAX):
        rows = slice(i * PMAX, (i + 1) * PMAX)
        tile = nl.load(x[rows, :])
        nl.store(y[rows, :], value=nl.multiply(tile, SCALE))
    return y


@nki.jit
def rows_grouped(x, ROWS_PER_PARTITION=16):
    """``x * SCALE`` for an [R, C] HBM tensor, ``ROWS_PER_PARTITION`` consecutive rows per
    partition (R a multiple of 128 * ROWS_PER_PARTITION)."""
    n_rows, n_cols = x.shape
    rows_per_tile = PMAX * ROWS_PER_PARTITION
    assert n_rows % rows_per_tile == 0, \
        "rows_grouped: expected R a multiple of 128 * ROWS_PER_PARTITION"
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    # Partition p of tile i holds rows i*rows_per_tile + p*ROWS_PER_PARTITION + r: a
    # [128, ROWS_PER_PARTITION, C] tile whose per-partition slice is one contiguous HBM run.
    i_p = nl.arange(PMAX)[:, None, None]
    i_r = nl.arange(ROWS_PER_PARTITION)[None, :, None]
    i_c = nl.arange(n_cols)[None, None, :]
    for i in nl.affine_range(n_rows // rows_per_tile):
        rows = i * rows_per_tile + i_p * ROWS_PER_PARTITION + i_r
        tile = nl.load(x[rows, i_c])
        nl.store(y[rows, i_c], value=nl.multiply(tile, SCALE))
    return y


KERNELS = {"row_per_partition": row_per_partition, "rows_grouped": rows_grouped}


def reference(x, ROWS_PER_PARTITION=16):
    """numpy meaning of both kernels (the grouping does not change the result)."""
    return (x * np.asarray(SCALE, dtype=x.dtype)).astype(x.dtype)


def example_inputs(R=4096, C=32, dtype="float32"):
    """A seeded [R, C] tensor (by default 4096 rows of 128 B: two tiles of 16 rows per
    partition, or 32 tiles of one row per partition)."""
    rng = np.random.default_rng(13)
    return {"x": rng.standard_normal((R, C)).astype(dtype)}
