"""The matmul ladder: ``out[M, N] = lhsT[K, M].T @ rhs[K, N]``, one optimisation per step.

bf16 in, fp32 accumulation in PSUM, bf16 out. Step 1 (a single TensorE tile) is
``kernels/matmul_single_tile.py``; this file holds the steps that tile a large problem.

The hardware facts that drive each step:

* One ``nc_matmul`` takes a stationary tile (K <= 128 partitions x M <= 128) and a moving tile
  (K x N <= 512) and costs about N TensorE cycles (512 cycles = 183 ns at 2.8 GHz), so at
  [4096 x 8192] x [8192 x 8192] TensorE alone needs 32 x 64 x 16 = 32768 matmuls = 6.0 ms.
* The 16 DMA engines move about 290 B/ns together, and only when each partition's slice of a
  transfer is large: below ~2 KiB per partition a transfer is dominated by its per-descriptor
  overhead (a [128, 128] bf16 tile moves 256 B per partition, at ~10% of the peak).
* PSUM has 8 banks of [128, 512] fp32: at most 8 accumulation groups are open at a time.
* SBUF holds 192 KiB per partition, so blocks of both operands (and of the result) can stay
  on chip and be reused by many matmuls.

The steps (``KERNELS``, in order):

2. ``tiled``: loop over output tiles, accumulate over K tiles in one PSUM bank; both operand
   tiles are loaded inside the innermost loop, so every matmul waits for two small DMAs.
3. ``hoisted``: the stationary column block of lhsT (all of K for one 128-wide M tile) is
   loaded once per M tile, outside the N and K loops; only the moving tile is loaded per matmul.
4. ``blocked_free``: ``BLOCK_M`` x ``BLOCK_N`` output tiles per block (at most 8, one PSUM bank
   each). A moving tile is loaded once per K step for the whole block, 512 * BLOCK_N wide, and
   feeds BLOCK_M matmuls; the stationary block of BLOCK_M M tiles is hoisted as in step 3.
5. ``blocked_all``: all three dimensions blocked, with SBUF-resident blocks: for each
   [128 * BLOCK_M, 512 * BLOCK_N] output block, a fp32 result block stays in SBUF while K is
   walked in blocks of ``BLOCK_K`` tiles; each K block loads one lhsT block and one rhs block
   (BLOCK_K DMAs each, 128 * BLOCK_M and 512 * BLOCK_N wide), runs BLOCK_M * BLOCK_N PSUM groups
   of BLOCK_K matmuls and adds them into the result block. PSUM no longer caps the block size,
   so blocks can be larger than in step 4 and each operand is fetched from HBM fewer times.
"""

import ml_dtypes
import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

TILE_K = 128  # contraction tile: the partitions of both operands
TILE_M = 128  # nl.tile_size.gemm_stationary_fmax
TILE_N = 512  # nl.tile_size.gemm_moving_fmax (one PSUM bank of fp32)
PSUM_BANKS = 8  # accumulation groups open at once


def _tiles_and_output(lhsT, rhs):
    """Tile counts (k, m, n) of a problem and its [M, N] HBM output (input dtype); every
    dimension must be a whole number of tiles."""
    k_dim, m_dim = lhsT.shape
    k_rhs, n_dim = rhs.shape
    assert k_dim == k_rhs, "matmul: lhsT and rhs must have the same K (first) dimension"
    assert k_dim % TILE_K == 0 and m_dim % TILE_M == 0 and n_dim % TILE_N == 0, \
        "matmul ladder: expected K and M multiples of 128 and N a multiple of 512"
    out = nl.ndarray((m_dim, n_dim), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    return k_dim // TILE_K, m_dim // TILE_M, n_dim // TILE_N, out


@nki.jit
def tiled(lhsT, rhs):
    """Step 2: one PSUM accumulation group per output tile, both loads in the K loop."""
    k_tiles, m_tiles, n_tiles, out = _tiles_and_output(lhsT, rhs)

    for m in nl.affine_range(m_tiles):
        for n in nl.affine_range(n_tiles):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_tiles):
                stationary = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K,
                                          m * TILE_M:(m + 1) * TILE_M])
                moving = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nisa.nc_matmul(stationary, moving)
            nl.store(out[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                     value=nl.copy(acc, dtype=out.dtype))
    return out


@nki.jit
def hoisted(lhsT, rhs):
    """Step 3: the lhsT column block of an M tile is loaded once, outside the N and K loops."""
    k_tiles, m_tiles, n_tiles, out = _tiles_and_output(lhsT, rhs)

    for m in nl.affine_range(m_tiles):
        # All of K for this M tile: k_tiles stationary tiles side by side in each partition.
        stationary = nl.ndarray((k_tiles, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype)
        for k in nl.affine_range(k_tiles):
            stationary[k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K,
                                         m * TILE_M:(m + 1) * TILE_M])
        for n in nl.affine_range(n_tiles):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_tiles):
                moving = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nisa.nc_matmul(stationary[k], moving)
            nl.store(out[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                     value=nl.copy(acc, dtype=out.dtype))
    return out


@nki.jit
def blocked_free(lhsT, rhs, BLOCK_M=4, BLOCK_N=2):
    """Step 4: BLOCK_M x BLOCK_N output tiles per block share every loaded operand tile."""
    k_tiles, m_tiles, n_tiles, out = _tiles_and_output(lhsT, rhs)
    assert BLOCK_M * BLOCK_N <= PSUM_BANKS, \
        "blocked_free: BLOCK_M * BLOCK_N accumulators must fit the 8 PSUM banks"
    assert m_tiles % BLOCK_M == 0 and n_tiles % BLOCK_N == 0, \
        "blocked_free: M / 128 and N / 512 must be multiples of BLOCK_M and BLOCK_N"
    block_m, block_n = BLOCK_M * TILE_M, BLOCK_N * TILE_N

    for mb in nl.affine_range(m_tiles // BLOCK_M):
        stationary = nl.ndarray((k_tiles, nl.par_dim(TILE_K), block_m), dtype=lhsT.dtype)
        for k in nl.affine_range(k_tiles):
            stationary[k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K,
                                         mb * block_m:(mb + 1) * block_m])
        for nb in nl.affine_range(n_tiles // BLOCK_N):
            acc = nl.zeros((BLOCK_M * BLOCK_N, nl.par_dim(TILE_M), TILE_N), nl.float32,
                           buffer=nl.psum)
            for k in nl.affine_range(k_tiles):
                moving = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K,
                                     nb * block_n:(nb + 1) * block_n])
                # Stationary outer, moving inner: consecutive matmuls share a stationary tile,
                # so TensorE loads each one once per K step.
                for i in nl.affine_range(BLOCK_M):
                    for j in nl.affine_range(BLOCK_N):
                        acc[i * BLOCK_N + j] += nisa.nc_matmul(
                            stationary[k, :, i * TILE_M:(i + 1) * TILE_M],
                            moving[:, j * TILE_N:(j + 1) * TILE_N])
            for i in nl.affine_range(BLOCK_M):
                for j in nl.affine_range(BLOCK_N):
                    row, col = mb * block_m + i * TILE_M, nb * block_n + j * TILE_N
                    nl.store(out[row:row + TILE_M, col:col + TILE_N],
                             value=nl.copy(acc[i * BLOCK_N + j], dtype=out.dtype))
    return out


@nki.jit
def blocked_all(lhsT, rhs, BLOCK_M=4, BLOCK_N=2, BLOCK_K=2):
    """Step 5: M, N and K blocked; operand blocks and an fp32 result block live in SBUF."""
    k_tiles, m_tiles, n_tiles, out = _tiles_and_output(lhsT, rhs)
    assert m_tiles % BLOCK_M == 0 and n_tiles % BLOCK_N == 0 and k_tiles % BLOCK_K == 0, \
        "blocked_all: M / 128, N / 512 and K / 128 must be multiples of BLOCK_M, BLOCK_N, BLOCK_K"
    block_m, block_n = BLOCK_M * TILE_M, BLOCK_N * TILE_N

    for nb in nl.affine_range(n_tiles // BLOCK_N):
        for mb in nl.affine_range(m_tiles // BLOCK_M):
            result = nl.zeros((BLOCK_M, nl.par_dim(TILE_M), block_n), nl.float32)
            for kb in nl.affine_range(k_tiles // BLOCK_K):
                stationary = nl.ndarray((BLOCK_K, nl.par_dim(TILE_K), block_m),
                                        dtype=lhsT.dtype)
                moving = nl.ndarray((BLOCK_K, nl.par_dim(TILE_K), block_n), dtype=rhs.dtype)
                for k in nl.affine_range(BLOCK_K):
                    row = (kb * BLOCK_K + k) * TILE_K
                    stationary[k] = nl.load(lhsT[row:row + TILE_K,
                                                 mb * block_m:(mb + 1) * block_m])
                    moving[k] = nl.load(rhs[row:row + TILE_K, nb * block_n:(nb + 1) * block_n])
                for i in nl.affine_range(BLOCK_M):
                    for j in nl.affine_range(BLOCK_N):
                        acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(BLOCK_K):
                            acc += nisa.nc_matmul(stationary[k, :, i * TILE_M:(i + 1) * TILE_M],
                                                  moving[k, :, j * TILE_N:(j + 1) * TILE_N])
                        # PSUM holds one K block's partial sum; the running sum over K blocks
                        # is kept in SBUF (VectorE reads PSUM and SBUF, writes SBUF).
                        cols = slice(j * TILE_N, (j + 1) * TILE_N)
                        result[i, :, cols] = nl.add(result[i, :, cols], acc)
            for i in nl.affine_range(BLOCK_M):
                row = mb * block_m + i * TILE_M
                nl.store(out[row:row + TILE_M, nb * block_n:(nb + 1) * block_n],
                         value=nl.copy(result[i], dtype=out.dtype))
    return out


KERNELS = {"tiled": tiled, "hoisted": hoisted, "blocked_free": blocked_free,
           "blocked_all": blocked_all}


def reference(lhsT, rhs, **block_factors):
    """fp32 products summed in fp32, rounded to the input dtype (block factors do not matter)."""
    return (lhsT.astype(np.float32).T @ rhs.astype(np.float32)).astype(lhsT.dtype)


def example_inputs(M=512, K=512, N=1024, dtype="bfloat16"):
    """Seeded lhsT [K, M] and rhs [K, N] of ``dtype``; the defaults make 4 x 2 output tiles and
    4 K tiles, so every kernel's default blocks divide them."""
    dt = np.dtype(getattr(ml_dtypes, dtype, dtype))  # "bfloat16", "float8_e4m3", numpy names
    rng = np.random.default_rng(12)
    return {"lhsT": rng.standard_normal((K, M)).astype(dt),
            "rhs": rng.standard_normal((K, N)).astype(dt)}
