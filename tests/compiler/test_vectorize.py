"""Loop vectorisation (compiler/vectorize.py): which ``affine_range`` loops merge, and into
what; the loops it must leave alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.config import TRN1, override


def config(**fields):
    return override(TRN1, {"compiler": {"balance_engines": False, "reorder": False},
                           **fields}, "tests")


def compute(kernel, *args, cfg=None):
    """(opcode, iterations merged) of every compute instruction the hardware runs."""
    prog = ncs.simulate(kernel, *args, functional=False).program
    inst = compile_program(prog, cfg or config()).instances[0]
    return [(ins.opcode.value, ins.attrs.get("vectorized", 1)) for ins in inst.instructions
            if ins.engine.value != "dma"]


def sliding(width: int, taps: int, loop=nl.affine_range):
    @nki.jit
    def kernel(img, filt):
        out = nl.ndarray((128, width), dtype=nl.float32, buffer=nl.shared_hbm)
        x, f = nl.load(img), nl.load(filt)
        acc = nl.ndarray((128, width), dtype=nl.float32, buffer=nl.sbuf)
        i_p, i_f = nl.arange(128)[:, None], nl.arange(taps)[None, :]
        for o in loop(width):
            prod = nisa.tensor_tensor(x[i_p, i_f + o], f, op=np.multiply)
            acc[i_p, o] = nisa.tensor_reduce(np.add, prod, axis=[1])
        nl.store(out, acc)
        return out
    args = (nt.tensor[[128, width + taps - 1], nl.float32], nt.tensor[[128, taps], nl.float32])
    return kernel, args


@settings(max_examples=12, deadline=None)
@given(width=st.integers(2, 48), taps=st.integers(1, 16))
def test_a_loop_merges_whole_exactly_when_its_operands_fit(width, taps):
    """Merged iff width x taps elements per partition fit vectorize_max_free_elements (here
    lowered to 96 to keep the kernels small); never partly."""
    kernel, args = sliding(width, taps)
    cfg = config(vectorize_max_free_elements=96)
    got = compute(kernel, *args, cfg=cfg)
    if width * taps <= 96:
        assert got == [("tensor_tensor", width), ("tensor_reduce", width)]
    else:
        assert got == [("tensor_tensor", 1), ("tensor_reduce", 1)] * width


def test_conv1d_evidence_64_iterations_merge_2048_do_not():
    """Autocomp's conv1d: 64 x [128, 3] is vectorised on the hardware, 2048 x [128, 3] not."""
    kernel, args = sliding(64, 3)
    assert compute(kernel, *args) == [("tensor_tensor", 64), ("tensor_reduce", 64)]
    kernel, args = sliding(2048, 3)
    assert len(compute(kernel, *args)) == 2 * 2048


def test_merged_latency_is_lower_and_values_unchanged():
    kernel, args = sliding(16, 3)
    img = np.random.default_rng(0).standard_normal((128, 18)).astype(np.float32)
    filt = np.random.default_rng(1).standard_normal((128, 3)).astype(np.float32)
    on = ncs.simulate(kernel, img, filt, config=config())
    off = ncs.simulate(kernel, img, filt, config=config(compiler={"vectorize": False}))
    want = np.stack([(img[:, o:o + 3] * filt).sum(axis=1) for o in range(16)], axis=1)
    np.testing.assert_allclose(on.outputs[0], want, rtol=1e-5)
    np.testing.assert_array_equal(on.outputs[0], off.outputs[0])
    assert on.latency_ns < off.latency_ns


@pytest.mark.parametrize("loop", [nl.sequential_range, nl.static_range, range])
def test_loops_other_than_affine_range_are_never_merged(loop):
    kernel, args = sliding(8, 3, loop)
    assert len(compute(kernel, *args)) == 16


def test_no_reorder_keeps_the_kernel_as_written():
    kernel, args = sliding(8, 3)
    kept = ncc.no_reorder(kernel)
    assert len(compute(kept, *args)) == 16


def test_a_body_with_a_dma_or_a_matmul_is_not_merged():
    @nki.jit
    def load_in_body(x):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        for o in nl.affine_range(8):
            t = nl.load(x[:, o:o + 1])
            acc[:, o] = nisa.tensor_scalar(t, np.multiply, 2.0)
        nl.store(out, acc)
        return out
    assert compute(load_in_body, nt.tensor[[128, 8], nl.float32]) == [("tensor_scalar", 1)] * 8


def test_iterations_that_write_one_tile_are_not_merged():
    """Each iteration overwrites the whole of one shared tile (no loop-carried read, so NKI
    accepts it): merging would lose the order of the writes."""
    @nki.jit
    def overwrite(x):
        out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        last = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
        for o in nl.affine_range(4):
            last[...] = nisa.tensor_scalar(t, np.multiply, float(o))
        nl.store(out, last)
        return out
    got = compute(overwrite, nt.tensor[[128, 4], nl.float32])
    assert got == [("tensor_scalar", 1)] * 4


def test_nested_loops_merge_outward_while_they_fit():
    @nki.jit
    def grid(x):
        out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        acc = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            for j in nl.affine_range(8):
                acc[:, i * 8 + j] = nisa.tensor_copy(t[:, i * 8 + j])
        nl.store(out, acc)
        return out
    arg = nt.tensor[[128, 32], nl.float32]
    assert compute(grid, arg) == [("tensor_copy", 4)]  # 8 merged, then 4 of those
    small = config(vectorize_max_free_elements=8)
    assert compute(grid, arg, cfg=small) == [("tensor_copy", 8)] * 4
