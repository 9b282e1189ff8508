"""The work of simulating a kernel of big block tensors grows linearly with it (issue 16), the
shape compilers give real kernels (NKIBench's matmul, GQA): block tensors of thousands of tiles
(``nl.ndarray((B0, B1, nl.par_dim(128), F))``, ``nl.zeros`` of PSUM blocks) written in one loop
nest and read in another, big enough to spill SBUF and PSUM.

Not a timed test: the work is the number of Python calls (functions and builtins, counted by
cProfile) of a timing-only ``simulate``, which is deterministic. Before issue 16's fixes it grew
with the square of the kernel: every PSUM access met every pending per-block zero memset, a
write to a block tensor scanned the hundreds of blocks sharing a column bucket, the
loop-dependency check rebuilt a row's index at every overwrite, every eviction ranked every
resident tile."""

from __future__ import annotations

import cProfile
import pstats
import warnings

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl


def _kernel(NB: int, MB: int, KB: int):
    """out[MB*128, NB*1024] = a[MB*128, KB*1024] @ b[KB*1024, NB*1024], the operands kept in
    block tensors, ``a`` transposed on TensorE through a PSUM block tensor."""

    def kernel(a, b):
        out = nl.ndarray((MB, 128, NB * 1024), dtype=np.float32, buffer=nl.shared_hbm)
        ident = nl.shared_constant(np.identity(128, dtype=np.float32))
        idl = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
        rhs = nl.ndarray((NB, KB, 8, nl.par_dim(128), 1024), dtype=np.float32, buffer=nl.sbuf)
        lhs = nl.ndarray((NB, MB, KB, nl.par_dim(128), 1024), dtype=np.float32,
                         buffer=nl.sbuf)
        tp = nl.zeros((NB, MB, KB, 8, nl.par_dim(128), 128), dtype=np.float32, buffer=nl.psum)
        lhs_t = nl.ndarray((NB, MB, KB, nl.par_dim(128), 8, 128), dtype=np.float32,
                           buffer=nl.sbuf)
        acc = nl.zeros((NB, MB, 2, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
        res = nl.ndarray((MB, NB, nl.par_dim(128), 1024), dtype=np.float32, buffer=nl.sbuf)
        p, f128, f512 = nl.arange(128)[:, None], nl.arange(128)[None, :], nl.arange(512)[None, :]
        f1024 = nl.arange(1024)[None, :]
        idl[p, f128] = nl.load(ident[p, f128])
        for n in nl.affine_range(NB):
            for k in nl.affine_range(KB):
                for j in nl.affine_range(8):
                    rhs[n, k, j, p, f1024] = nl.load(b[j + 8 * k, p, f1024 + 1024 * n])
            for m in nl.affine_range(MB):
                for k in nl.affine_range(KB):
                    lhs[n, m, k, p, f1024] = nl.load(a[m, p, f1024 + 1024 * k])
                    for j in nl.affine_range(8):
                        tp[n, m, k, j, p, f128] = nisa.nc_matmul(
                            lhs[n, m, k, p, 128 * j + f128], idl[p, f128], is_transpose=True,
                            is_moving_onezero=True)
                        lhs_t[n, m, k, p, j, f128] = nl.copy(tp[n, m, k, j, p, f128])
                for h in nl.affine_range(2):
                    for k in nl.affine_range(KB):
                        for j in nl.affine_range(8):
                            acc[n, m, h, p, f512] += nisa.nc_matmul(
                                lhs_t[n, m, k, p, j, f128], rhs[n, k, j, p, 512 * h + f512])
                    res[m, n, p, 512 * h + f512] = nl.copy(acc[n, m, h, p, f512])
                nl.store(out[m, p, f1024 + 1024 * n], value=res[m, n, p, f1024])
        return out

    inputs = (np.zeros((MB, 128, KB * 1024), np.float32),
              np.zeros((KB * 8, 128, NB * 1024), np.float32))
    return kernel, inputs


def _calls(NB: int, MB: int, KB: int) -> tuple[int, int]:
    """(Python calls of a timing-only simulate, instructions)."""
    kernel, inputs = _kernel(NB, MB, KB)
    profile = cProfile.Profile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (it spills: SpillWarning)
        profile.enable()
        res = ncs.simulate(kernel, *inputs, functional=False)
        profile.disable()
    assert res.timing is not None and res.timing.warnings  # it does spill
    return pstats.Stats(profile).total_calls, len(res.program.instructions)


def test_calls_per_instruction_stay_flat_on_block_tensors() -> None:
    # (709, 1417, 2769 instructions; the fixes' 876, 934, 953 calls per instruction; before
    # them 1351, 1929, 3018)
    (c1, n1), (c2, n2), (c3, n3) = _calls(1, 4, 4), _calls(2, 4, 4), _calls(2, 8, 4)
    assert n1 < n2 < n3 and n3 >= 3.5 * n1
    small, large = c1 / n1, c3 / n3
    assert large <= 1.25 * small, (small, c2 / n2, large)
