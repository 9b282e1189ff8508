"""Blocked bf16 matmul: out[M, N] = lhsT[K, M].T @ rhs[K, N].

For every 128-row block of the output and every group of ``n_block`` 512-wide column tiles, the
kernel streams K in 128-deep steps: one stationary tile and one wide moving tile are loaded per
step and feed ``n_block`` matmuls that accumulate in ``n_block`` PSUM banks. The moving tile is
``512 * n_block`` columns wide, so the DMAs move 1 KiB * n_block per partition.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl


@nki.jit
def kernel(lhsT, rhs, n_block=4):
    k_size, m_size = lhsT.shape
    _, n_size = rhs.shape
    out = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    tm, tk, tn = 128, 128, 512
    for m in nl.affine_range(m_size // tm):
        for nb in nl.affine_range(n_size // (tn * n_block)):
            accs = [nl.zeros((tm, tn), nl.float32, buffer=nl.psum) for _ in range(n_block)]
            for k in nl.affine_range(k_size // tk):
                stationary = nl.load(lhsT[k * tk:(k + 1) * tk, m * tm:(m + 1) * tm])
                moving = nl.load(rhs[k * tk:(k + 1) * tk,
                                     nb * tn * n_block:(nb + 1) * tn * n_block])
                for j in range(n_block):
                    accs[j] += nisa.nc_matmul(stationary, moving[:, j * tn:(j + 1) * tn])
            for j in range(n_block):
                col = (nb * n_block + j) * tn
                nl.store(out[m * tm:(m + 1) * tm, col:col + tn],
                         value=nl.copy(accs[j], dtype=lhsT.dtype))
    return out


def reference(lhsT, rhs, n_block=4):
    """float32 matmul of the bf16 inputs, rounded to the output dtype (bf16)."""
    return (lhsT.astype(np.float32).T @ rhs.astype(np.float32)).astype(lhsT.dtype)


def example_inputs(M=128, K=256, N=2048, dtype="bfloat16"):
    """Seeded inputs of a [M x K] x [K x N] matmul (lhsT is [K, M]); M, K multiples of 128 and
    N of 512 * n_block."""
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    rng = np.random.default_rng(0)
    # float32 draws: half the memory and time of float64 ones at [8192 x 8192].
    return {"lhsT": rng.standard_normal((K, M), dtype=np.float32).astype(dt),
            "rhs": rng.standard_normal((K, N), dtype=np.float32).astype(dt)}
