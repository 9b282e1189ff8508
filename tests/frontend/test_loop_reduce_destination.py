"""nl.loop_reduce reduces into the tile its result is assigned to (the NKI docs: "the destination
tile is also the rhs input to op"), however the loops around it are nested."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.errors import ShapeError

F32 = np.float32
RNG = np.random.default_rng(14)
UNFOLDED = override(TRN1, {"compiler": {"fold_copies": False}}, "tests")


def test_subscript_destination_keeps_one_sum_per_slot_with_the_reduced_loop_outside():
    # The reduced loop (k) is the OUTER one and the destination slot changes with the inner
    # loop (q), as a flash-attention backward accumulates dq over key tiles: each slot of
    # acc keeps its own sum. A later k skips the first q slot, as a causal kernel skips tiles.
    # The slots start uninitialised (an nl.ndarray): k = 0 starts each reduction.
    def kernel(a):
        out = nl.ndarray((3, 128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((3, nl.par_dim(128), 32), dtype=nl.float32)  # uninitialised
        for k in nl.affine_range(4):
            for q in nl.affine_range(3):
                if q >= k - 1:
                    t = nisa.tensor_copy(nl.load(a[k, q]))
                    acc[q, :, :] = nl.loop_reduce(t, op=np.add, loop_indices=(k,),
                                                  dtype=nl.float32)
        for q in nl.affine_range(3):
            nl.store(out[q], value=acc[q])
        return out

    a = RNG.standard_normal((4, 3, 128, 32)).astype(F32)
    ref = np.stack([sum(a[k, q] for k in range(4) if q >= k - 1) for q in range(3)])
    res = ncs.simulate(kernel, a, config=UNFOLDED)
    np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-5, atol=1e-5)
    # k = 0 starts each slot (a copy, the slot is not read); every later accumulation is one
    # VectorE tensor_tensor reading and writing its slot (counted as recorded: the compile
    # stage would fold the copy of k = 0 into the copy that made t)
    ops = list(res.events[res.events.engine == "vector"].opcode)
    assert ops.count("tensor_tensor") == 6 and ops.count("tensor_copy") >= 3


def test_name_bound_before_the_loop_is_the_destination():
    # the docs' form: b = nl.zeros(...) before the loop, b = nl.loop_reduce(a, ...) inside;
    # the start value counts (ones here, not op's identity)
    def kernel(a):
        out = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        b = nl.full((128, 16), 1.0, dtype=nl.float32)
        for k in nl.affine_range(5):
            b = nl.loop_reduce(nl.load(a[k]), op=np.maximum, loop_indices=[k])
        nl.store(out, value=b)
        return out

    a = RNG.standard_normal((5, 128, 16)).astype(F32)
    out = ncs.simulate(kernel, a, timing=False).outputs[0]
    np.testing.assert_array_equal(out, np.maximum(a.max(axis=0), 1.0))


def test_loop_reduce_into_hbm_or_a_different_shape_is_an_error():
    def into_hbm(a):
        out = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        for k in nl.affine_range(2):
            out[:, :] = nl.loop_reduce(nl.load(a[k]), op=np.add, loop_indices=[k])  # BAD
        return out

    def other_shape(a):
        acc = nl.zeros((128, 32), dtype=nl.float32)
        for k in nl.affine_range(2):
            acc[:, 0:8] = nl.loop_reduce(nl.load(a[k]), op=np.add, loop_indices=[k])  # BAD

    a = np.zeros((2, 128, 16), F32)
    expect_error(ShapeError, r"reads its destination \(nl.loop_reduce\): expected an SBUF or "
                 r"PSUM region of the result's shape \[128, 16\], found hbm", into_hbm, a)
    # (the first iteration starts the reduction with a plain assignment: its shape check)
    expect_error(ShapeError, r"assignment: expected shapes that broadcast .* found \[128, 16\] "
                 r"and \[128, 8\]", other_shape, a)


def test_a_slot_whose_first_iteration_is_skipped_accumulates_onto_its_start_value():
    # causal-style skipping: slot q first receives data at k = q, onto its nl.zeros
    def kernel(a):
        out = nl.ndarray((3, 128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((3, nl.par_dim(128), 16), dtype=nl.float32)
        for k in nl.affine_range(3):
            for q in nl.affine_range(3):
                if k >= q:
                    acc[q] = nl.loop_reduce(nl.load(a[k, q]), op=np.add, loop_indices=[k])
        for q in nl.affine_range(3):
            nl.store(out[q], value=acc[q])
        return out

    a = RNG.standard_normal((3, 3, 128, 16)).astype(F32)
    ref = np.stack([sum(a[k, q] for k in range(3) if k >= q) for q in range(3)])
    out = ncs.simulate(kernel, a, timing=False).outputs[0]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
