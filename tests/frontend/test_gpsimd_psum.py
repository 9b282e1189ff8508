"""GpSimd cannot access PSUM (architecture guide): assigning a GpSimd result to a PSUM tile is
an error at the kernel line, not a silent extra copy; a tensor_tensor whose engine the front
end picked (int32 arithmetic) still reaches PSUM through a VectorE copy."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import MemorySpaceError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl


def _line(k) -> str:
    src, start = inspect.getsourcelines(k)
    return f"test_gpsimd_psum.py:{start + next(i for i, s in enumerate(src) if '# BAD' in s)}"


def _memset(a):
    p = nl.ndarray(a.shape, nl.float32, buffer=nl.psum)
    p[...] = nisa.memset(a.shape, 1.0, nl.float32, engine=nisa.engine.gpsimd)  # BAD


def _iota(a):
    p = nl.ndarray((4, 8), nl.float32, buffer=nl.psum)
    i = nl.mgrid[0:4, 0:8]
    p[...] = nisa.iota(i[0] + i[1], nl.float32)  # BAD


def _copy(a):
    p = nl.ndarray(a.shape, nl.float32, buffer=nl.psum)
    p[...] = nisa.tensor_copy(nl.load(a), engine=nisa.engine.gpsimd)  # BAD


@pytest.mark.parametrize("k,what", [(_memset, "memset"), (_iota, "iota"),
                                    (_copy, "tensor_copy")])
def test_gpsimd_result_into_psum_is_an_error(k, what):
    with pytest.raises(MemorySpaceError, match=f"GpSimd {what} result: GpSimd cannot access "
                       "PSUM; expected an SBUF destination, found psum") as info:
        ncs.trace(k, np.ones((4, 8), np.float32))
    assert info.value.loc == _line(k)


def test_gpsimd_results_in_sbuf_and_picked_engines_still_work():
    def k(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        s = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
        s[...] = nisa.tensor_copy(nl.load(a), engine=nisa.engine.gpsimd)
        p = nl.ndarray(a.shape, nl.int32, buffer=nl.psum)
        p[...] = nisa.tensor_tensor(nl.load(b), nl.load(b), np.add)  # GpSimd picked: a copy
        nl.store(out, value=s + nl.copy(p, dtype=nl.float32))
        return out

    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.arange(32, dtype=np.int32).reshape(4, 8)
    np.testing.assert_array_equal(ncs.trace(k, a, b).outputs[0], a + 2 * b)


def test_affine_select_from_psum_is_staged_in_sbuf():
    """NKI's attention kernels select straight from PSUM scores: a VectorE copy to SBUF first,
    then the GpSimd affine_select reads SBUF."""
    def k(a, b):
        out = nl.ndarray((32, 32), nl.float32, buffer=nl.shared_hbm)
        scores = nisa.nc_matmul(nl.load(a), nl.load(b))  # PSUM
        i_q, i_k = nl.mgrid[0:32, 0:32]
        nl.store(out, value=nisa.affine_select(i_q - i_k >= 0, scores, -9984.0))
        return out

    a = np.random.default_rng(1).random((16, 32), dtype=np.float32)
    b = np.random.default_rng(2).random((16, 32), dtype=np.float32)
    launch = ncs.trace(k, a, b)
    want = np.where(np.tril(np.ones((32, 32), bool)), a.T @ b, -9984.0)
    np.testing.assert_allclose(launch.outputs[0], want, rtol=1e-5)
    sel = next(i for i in launch.program.instructions if i.opcode.value == "affine_select")
    assert sel.engine.value == "gpsimd" and sel.srcs["on_true"].space.value == "sbuf"
