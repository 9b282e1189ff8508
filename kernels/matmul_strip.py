"""The matmul ladder's last step, as AWS's matmul tutorial describes its fully optimized kernel:
``out[M, N] = lhsT[K, M].T @ rhs[K, N]`` with a result strip resident in SBUF.

For each N block of ``BLOCK_N`` 512-wide tiles, the running sum of every M row of that block
(a strip [M, 512 * BLOCK_N]) stays in SBUF, in the output dtype, while K is walked in blocks of
``BLOCK_K`` 128-deep tiles, in order (``sequential_range``: each K block adds into the strip).
Each rhs block is loaded once per (N block, K block) and reused by every M block; each lhsT block
once per (N block, K block, M block). So rhs crosses HBM once and lhsT once per N block: at
[4096 x 8192] x [8192 x 8192] with BLOCK_N = 2, 128 + 512 MiB of reads, against the 768 MiB of
``kernels/matmul_ladder.py::blocked_all`` (step 5), whose rhs block is fetched again for every M
block. Keeping the strip in bf16 (not fp32) halves it, so at the tutorial's blocks (M 16, N 2,
K 8 tiles) the operand blocks still fit twice and the loads of the next K block overlap the
matmuls of this one; the price is a rounding to bf16 after every K block (``reference``).
"""

import ml_dtypes
import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

TILE_K, TILE_M, TILE_N = 128, 128, 512  # partitions; stationary and moving free sizes


@nki.jit
def kernel(lhsT, rhs, BLOCK_M=2, BLOCK_N=2, BLOCK_K=2):
    """Result strips per N block in SBUF; rhs blocks shared by every M block of a K block."""
    k_dim, m_dim = lhsT.shape
    _, n_dim = rhs.shape
    block_m, block_n, block_k = BLOCK_M * TILE_M, BLOCK_N * TILE_N, BLOCK_K * TILE_K
    assert m_dim % block_m == 0 and n_dim % block_n == 0 and k_dim % block_k == 0, \
        "matmul_strip: M, N and K must be multiples of 128 * BLOCK_M, 512 * BLOCK_N, 128 * BLOCK_K"
    out = nl.ndarray((m_dim, n_dim), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    m_blocks = m_dim // block_m

    for nb in nl.affine_range(n_dim // block_n):
        strip = nl.zeros((m_blocks, BLOCK_M, nl.par_dim(TILE_M), block_n), out.dtype)
        for kb in nl.sequential_range(k_dim // block_k):
            moving = nl.ndarray((BLOCK_K, nl.par_dim(TILE_K), block_n), dtype=rhs.dtype)
            for k in nl.affine_range(BLOCK_K):
                row = kb * block_k + k * TILE_K
                moving[k] = nl.load(rhs[row:row + TILE_K, nb * block_n:(nb + 1) * block_n])
            for mb in nl.affine_range(m_blocks):
                stationary = nl.ndarray((BLOCK_K, nl.par_dim(TILE_K), block_m), dtype=lhsT.dtype)
                for k in nl.affine_range(BLOCK_K):
                    row = kb * block_k + k * TILE_K
                    stationary[k] = nl.load(lhsT[row:row + TILE_K, mb * block_m:(mb + 1) * block_m])
                for j in nl.affine_range(BLOCK_N):
                    for i in nl.affine_range(BLOCK_M):
                        acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(BLOCK_K):
                            acc += nisa.nc_matmul(stationary[k, :, i * TILE_M:(i + 1) * TILE_M],
                                                  moving[k, :, j * TILE_N:(j + 1) * TILE_N])
                        cols = slice(j * TILE_N, (j + 1) * TILE_N)
                        strip[mb, i, :, cols] = nl.add(strip[mb, i, :, cols], acc)
        for mb in nl.affine_range(m_blocks):
            for i in nl.affine_range(BLOCK_M):
                row = (mb * BLOCK_M + i) * TILE_M
                nl.store(out[row:row + TILE_M, nb * block_n:(nb + 1) * block_n],
                         value=strip[mb, i])
    return out


def reference(lhsT, rhs, BLOCK_M=2, BLOCK_N=2, BLOCK_K=2):
    """fp32 products summed in fp32 per K block, each block's sum added to the running sum in
    fp32 and rounded to the output dtype, as the kernel's VectorE adds do."""
    block_k = BLOCK_K * TILE_K
    a, b = lhsT.astype(np.float32), rhs.astype(np.float32)
    acc = np.zeros((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype)
    for k0 in range(0, lhsT.shape[0], block_k):
        part = a[k0:k0 + block_k].T @ b[k0:k0 + block_k]
        acc = (acc.astype(np.float32) + part).astype(lhsT.dtype)
    return acc


def example_inputs(M=512, K=512, N=2048, dtype="bfloat16"):
    """Seeded lhsT [K, M] and rhs [K, N]; the defaults make two blocks along each dimension."""
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    rng = np.random.default_rng(21)
    return {"lhsT": rng.standard_normal((K, M), dtype=np.float32).astype(dt),
            "rhs": rng.standard_normal((K, N), dtype=np.float32).astype(dt)}
