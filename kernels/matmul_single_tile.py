"""Step 1 of the matmul ladder: one TensorE tile, ``out = lhsT.T @ rhs``.

The smallest complete matmul: both operands fit one TensorE instruction. K (the contraction)
sits on the partition axis of both operands and must be <= 128; the stationary operand's free
size M becomes the output's partitions (<= 128, ``gemm_stationary_fmax``); the moving operand's
free size N streams through the array (<= 512, ``gemm_moving_fmax``, one 2 KiB PSUM bank of
fp32 per partition). The product lands in PSUM as fp32, is rounded to bf16 on the way back to
SBUF (VectorE copy) and stored.

``kernels/matmul_ladder.py`` continues the ladder (steps 2 to 5) for matrices of any size.
"""

import ml_dtypes
import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

MAX_K = 128  # partitions of both operands
MAX_M = 128  # nl.tile_size.gemm_stationary_fmax
MAX_N = 512  # nl.tile_size.gemm_moving_fmax


@nki.jit
def kernel(lhsT, rhs):
    """Return ``lhsT.T @ rhs`` for lhsT [K, M], rhs [K, N] with K, M <= 128 and N <= 512."""
    k_dim, m_dim = lhsT.shape
    k_rhs, n_dim = rhs.shape
    assert k_dim == k_rhs, "matmul: lhsT and rhs must have the same K (first) dimension"
    assert k_dim <= MAX_K and m_dim <= MAX_M and n_dim <= MAX_N, \
        "matmul_single_tile: expected K <= 128, M <= 128, N <= 512 (use matmul_ladder.py)"
    out = nl.ndarray((m_dim, n_dim), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    stationary = nl.load(lhsT)
    moving = nl.load(rhs)
    product = nisa.nc_matmul(stationary, moving)  # fp32 [M, N] in PSUM
    nl.store(out, value=nl.copy(product, dtype=out.dtype))
    return out


def reference(lhsT, rhs):
    """fp32 products of the inputs, summed in fp32, rounded to the input dtype."""
    return (lhsT.astype(np.float32).T @ rhs.astype(np.float32)).astype(lhsT.dtype)


def example_inputs(M=128, K=128, N=512, dtype="bfloat16"):
    """Seeded lhsT [K, M] and rhs [K, N] of ``dtype`` (one full TensorE tile by default)."""
    dt = np.dtype(getattr(ml_dtypes, dtype, dtype))  # "bfloat16", "float8_e4m3", numpy names
    rng = np.random.default_rng(11)
    return {"lhsT": rng.standard_normal((K, M)).astype(dt),
            "rhs": rng.standard_normal((K, N)).astype(dt)}
