"""An HBM tensor indexed by one element of an SBUF tile (w[e[0, 0], ...], as MoE kernels pick an
expert's weights): the offset is read when the DMA is traced, and the DMA waits for it."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import AccessError

F32 = np.float32
RNG = np.random.default_rng(8)


def _expert_copy(w, experts, out):
    p = nl.arange(128)[:, None]
    f = nl.arange(64)[None, :]
    for b in nl.sequential_range(experts.shape[0]):
        e = nl.load(experts[b])                       # a [1, 1] int32 tile
        rows = nl.load(w[e[0, 0], p, f])              # that expert's [128, 64] block
        nl.store(out[e[0, 0], p, f], value=nl.multiply(rows, 2.0))


def test_load_and_store_at_a_runtime_expert_index():
    w = RNG.standard_normal((4, 128, 64)).astype(F32)
    experts = np.array([[2], [0], [3]], np.int32)
    out = np.zeros_like(w)
    res = ncs.simulate(_expert_copy, w, experts, out)
    ref = np.zeros_like(w)
    ref[[2, 0, 3]] = 2 * w[[2, 0, 3]]
    np.testing.assert_array_equal(out, ref)
    # every weight DMA names its offset element as a source (it waits for the index load)
    dmas = [i for i in res.program.instructions if "offset" in i.srcs]
    assert len(dmas) == 6


def test_runtime_offset_out_of_range_is_an_access_error():
    def kernel(w, experts):
        e = nl.load(experts)
        nl.load(w[e[0, 0], nl.arange(128)[:, None], nl.arange(64)[None, :]])  # BAD

    expect_error(AccessError, r"runtime offset read from SBUF .*expected an index of dim 0 of "
                 r"\[4, 128, 64\] in 0..3, found 7", kernel, np.zeros((4, 128, 64), F32),
                 np.array([[7]], np.int32))
