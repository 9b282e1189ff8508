"""``t.buffer`` answers with the nl buffer objects, so kernels can branch on where a tile lives
(``if src.buffer is nl.psum:``, as AWS's team kernels' helpers do)."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.program.ir import MemSpace


def copy_to_sbuf(src):
    """A helper in the style of the team kernels: PSUM tiles are evacuated, SBUF ones kept."""
    if src.buffer is nl.psum:
        return nl.copy(src, dtype=nl.float32)
    return src


def kernel(a):
    t = nl.load(a)
    product = nisa.nc_matmul(t, t)
    out = nl.ndarray((2, 128, 128), nl.float32, buffer=nl.shared_hbm)
    seen = (a.buffer, t.buffer, product.buffer, out.buffer)
    assert seen == (nl.hbm, nl.sbuf, nl.psum, nl.shared_hbm)
    assert seen[1] is nl.sbuf and seen[2] is nl.psum and seen[2] is not nl.sbuf
    assert copy_to_sbuf(product).buffer is nl.sbuf and copy_to_sbuf(t) is t
    placed = nl.ndarray((nl.par_dim(128), 8), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    assert placed.buffer is nl.sbuf  # a direct allocation lives in SBUF too
    nl.store(out[0], copy_to_sbuf(product))
    nl.store(out[1], t)
    return out


def test_buffer_is_the_nl_buffer_object():
    a = np.eye(128, dtype=np.float32)
    res = ncs.simulate(kernel, a, timing=False)
    np.testing.assert_array_equal(res.outputs[0][0], a.T @ a)
    np.testing.assert_array_equal(res.outputs[0][1], a)


def test_buffers_still_compare_equal_to_their_memory_space():
    assert nl.psum == MemSpace.PSUM and nl.sbuf == MemSpace.SBUF and nl.hbm == MemSpace.HBM
    assert nl.psum != MemSpace.SBUF and nl.hbm != nl.shared_hbm
    assert len({nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm, nl.private_hbm}) == 5
