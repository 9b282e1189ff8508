"""Tiled bfloat16 matrix multiply with fp32 accumulation in PSUM.

Computes ``lhsT.T @ rhs``. The left operand arrives already transposed ([K, M]) because TensorE
contracts over the partition axis: both operands of ``nc_matmul`` put K on the partitions. Tile
sizes are TensorE's limits: K <= 128 (partitions), M <= 128 (stationary free size), N <= 512
(moving free size, one 2 KiB PSUM bank of fp32 per partition).

Each [128, 512] output tile is one PSUM accumulation group: ``nl.zeros(..., buffer=nl.psum)``
then ``+= nisa.nc_matmul(...)`` over the K tiles, then one copy to SBUF and one store.
"""

import ml_dtypes
import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

TILE_K = 128  # contraction tile: the partition dim of both operands
TILE_M = 128  # nl.tile_size.gemm_stationary_fmax
TILE_N = 512  # nl.tile_size.gemm_moving_fmax


@nki.jit
def kernel(lhsT, rhs):
    """Return ``lhsT.T @ rhs`` in float32 for lhsT [K, M] and rhs [K, N] (bfloat16).

    K % 128 == 0, M % 128 == 0, N % 512 == 0.
    """
    k_dim, m_dim = lhsT.shape
    k_dim_rhs, n_dim = rhs.shape
    assert k_dim == k_dim_rhs, "matmul: lhsT and rhs must have the same K (first) dimension"
    product = nl.ndarray((m_dim, n_dim), dtype=nl.float32, buffer=nl.shared_hbm)

    for m in nl.affine_range(m_dim // TILE_M):
        for n in nl.affine_range(n_dim // TILE_N):
            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_dim // TILE_K):
                lhsT_tile = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K,
                                         m * TILE_M:(m + 1) * TILE_M])
                rhs_tile = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K,
                                       n * TILE_N:(n + 1) * TILE_N])
                # stationary = lhsT tile (its free axis becomes the output partitions),
                # moving = rhs tile (its free axis streams through as output columns).
                res_psum += nisa.nc_matmul(lhsT_tile, rhs_tile)

            res_sbuf = nl.copy(res_psum, dtype=product.dtype)
            nl.store(product[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                     value=res_sbuf)
    return product


def reference(lhsT, rhs):
    """numpy meaning of :func:`kernel`: exact bf16 inputs, products summed in float32."""
    return lhsT.astype(np.float32).T @ rhs.astype(np.float32)


def example_inputs():
    """Seeded bfloat16 lhsT [256, 256] and rhs [256, 1024]: 2 x 2 output tiles, 2 K tiles."""
    rng = np.random.default_rng(8)
    return {
        "lhsT": rng.standard_normal((256, 256)).astype(ml_dtypes.bfloat16),
        "rhs": rng.standard_normal((256, 1024)).astype(ml_dtypes.bfloat16),
    }
