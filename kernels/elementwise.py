"""Element-wise and DMA-heavy: out = relu(x * y + x) over [R, C] tensors in small tiles.

The tensors are cut into [128, ``TILE_COLS``] tiles (64 fp32 columns: 256 bytes per partition,
so every DMA is small and DMA fixed costs dominate). Per tile: two loads, a VectorE multiply,
a VectorE add, a ScalarE relu and a store; nothing is carried between tiles, so every loop is
an ``nl.affine_range`` and the tiles pipeline through their buffers. The element-wise shape of
the simulator's speed benchmarks (benchmarks/scaling.py). Our own code.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

TILE_ROWS = 128
TILE_COLS = 64


@nki.jit
def kernel(x, y):
    """relu(x * y + x) for two [R, C] tensors; R % 128 == 0, C % 64 == 0."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(rows // TILE_ROWS):
        for c in nl.affine_range(cols // TILE_COLS):
            window = (slice(r * TILE_ROWS, (r + 1) * TILE_ROWS),
                      slice(c * TILE_COLS, (c + 1) * TILE_COLS))
            x_t = nl.load(x[window])
            y_t = nl.load(y[window])
            s = nl.add(nl.multiply(x_t, y_t), x_t)
            nl.store(out[window], value=nl.relu(s))
    return out


def reference(x, y):
    """numpy meaning of :func:`kernel`."""
    return np.maximum(x * y + x, 0).astype(x.dtype)


def example_inputs(rows=256, cols=512):
    """Seeded float32 x, y of shape [rows, cols]."""
    rng = np.random.default_rng(9)
    return {"x": rng.standard_normal((rows, cols)).astype(np.float32),
            "y": rng.standard_normal((rows, cols)).astype(np.float32)}
