"""Element-wise add of two HBM tensors, one [128, 512] tile per SPMD program instance.

Launched on a 2-D grid: instance ``(i, j)`` owns rows ``[128 i, 128 (i + 1))`` and columns
``[512 j, 512 (j + 1))``, so the grid must be ``(rows / 128, cols / 512)`` (see :data:`GRID` for
the example inputs). The instance finds its tile with ``nl.program_id``.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

TILE_ROWS = 128  # one tile fills all partitions (nl.tile_size.pmax)
TILE_COLS = 512  # elements per partition handled by one instance

#: Launch grid for :func:`example_inputs` (rows / TILE_ROWS, cols / TILE_COLS).
GRID = (2, 2)


@nki.jit
def kernel(a, b):
    """Return ``a + b`` for two [R, C] HBM tensors, R % 128 == 0 and C % 512 == 0."""
    total = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)

    # Every instance runs the same code; only its program ids differ.
    row0 = nl.program_id(0) * TILE_ROWS
    col0 = nl.program_id(1) * TILE_COLS
    window = (nl.ds(row0, TILE_ROWS), nl.ds(col0, TILE_COLS))

    a_tile = nl.load(a[window])
    b_tile = nl.load(b[window])
    nl.store(total[window], value=nl.add(a_tile, b_tile))
    return total


def reference(a, b):
    """numpy meaning of :func:`kernel`."""
    return a + b


def example_inputs():
    """Two seeded float32 [256, 1024] tensors, in the kernel's parameter order."""
    rng = np.random.default_rng(0)
    shape = (GRID[0] * TILE_ROWS, GRID[1] * TILE_COLS)
    return {
        "a": rng.standard_normal(shape).astype(np.float32),
        "b": rng.standard_normal(shape).astype(np.float32),
    }
