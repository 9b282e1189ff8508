"""Repeated loads of one iteration merged (compiler/load_cse.py): which loads are dropped, what
their readers read instead, and which repeats are left alone."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.program.ir import Opcode

F32 = np.float32
OFF = override(TRN1, {"compiler": {"merge_repeated_loads": False}}, "tests")


@nki.jit
def rotate_halves(x, c, s):
    """A rotation written as RoPE kernels write it: every slice loaded once per product."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(x.shape[1] // 512):
        cols = slice(j * 512, (j + 1) * 512)
        a = nl.multiply(nl.load(x[0:64, cols]), nl.load(c[:, cols]))
        b = nl.multiply(nl.load(x[64:128, cols]), nl.load(s[:, cols]))
        d = nl.multiply(nl.load(x[0:64, cols]), nl.load(s[:, cols]))
        e = nl.multiply(nl.load(x[64:128, cols]), nl.load(c[:, cols]))
        nl.store(out[0:64, cols], value=nl.subtract(a, b))
        nl.store(out[64:128, cols], value=nl.add(e, d))
    return out


def rope_args(n=2048):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((128, n)).astype(F32), rng.standard_normal((64, n)).astype(F32),
            rng.standard_normal((64, n)).astype(F32))


def loads(kernel, args, config):
    prog = ncs.simulate(kernel, *args, functional=False).program
    inst = compile_program(prog, config).instances[0]
    return [ins for ins in inst.instructions if ins.opcode is Opcode.DMA_COPY
            and ins.out.tensor.kind == "tile"]


def test_the_second_load_of_a_slice_in_an_iteration_is_dropped():
    args = rope_args()
    off, on = loads(rotate_halves, args, OFF), loads(rotate_halves, args, TRN1)
    assert (len(off), len(on)) == (32, 16)  # 4 iterations x 8 loads as written, 4 distinct
    first_two = sorted({ins.loc.lineno for ins in off})[:2]
    assert sorted({ins.loc.lineno for ins in on}) == first_two  # the first reads keep theirs
    hbm = {name: ncs.simulate(rotate_halves, *args, functional=False,
                              config=cfg).summary()["hbm_bytes"]
           for name, cfg in (("off", OFF), ("on", TRN1))}
    tile, out = 64 * 512 * 4, 128 * 2048 * 4
    assert (hbm["off"], hbm["on"]) == (32 * tile + out, 16 * tile + out)


def test_the_readers_of_a_dropped_load_read_the_first_tile_and_the_values_hold():
    args = rope_args()
    prog = ncs.simulate(rotate_halves, *args, functional=False).program
    inst = compile_program(prog, TRN1).instances[0]
    written = {a.tensor.id for ins in inst.instructions for a in ins.dsts.values()}
    read = {a.tensor.id for ins in inst.instructions for a in ins.srcs.values()
            if a.tensor.kind == "tile"}
    assert read <= written  # nothing reads a tile whose load was dropped
    x, c, s = args
    res = ncs.simulate(rotate_halves, *args)
    want = np.concatenate([x[:64] * c - x[64:] * s, x[64:] * c + x[:64] * s])
    np.testing.assert_allclose(res.outputs[0], want, rtol=1e-6)
    assert ncs.simulate(rotate_halves, *args, functional=False).latency_ns < \
        ncs.simulate(rotate_halves, *args, functional=False, config=OFF).latency_ns


@nki.jit
def norm_then_scale(x):
    """rmsnorm_matmul's pattern: a block tensor per use, each block loaded in its iteration."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    first = nl.ndarray((4, nl.par_dim(128), 512), dtype=x.dtype, buffer=nl.sbuf)
    again = nl.ndarray((4, nl.par_dim(128), 512), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        first[i] = nl.load(x[i * 128:(i + 1) * 128, :])
        ss = nl.sum(nl.square(first[i]), axis=1, keepdims=True)
        again[i] = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(again[i], ss))
    return out


def test_a_block_tensor_loaded_again_block_by_block_is_merged():
    x = np.random.default_rng(1).standard_normal((512, 512)).astype(F32)
    assert (len(loads(norm_then_scale, (x,), OFF)), len(loads(norm_then_scale, (x,), TRN1))) \
        == (8, 4)
    res = ncs.simulate(norm_then_scale, x)
    np.testing.assert_allclose(res.outputs[0], x * (x * x).sum(1, keepdims=True), rtol=1e-5)


@nki.jit
def sliding_rows(x):
    """A Python loop whose next iteration loads, on an earlier line, what this one loaded on a
    later line: those are two iterations' loads, not one iteration's repeat."""
    out = nl.ndarray((3, 128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(3):
        a = nl.load(x[i * 128:(i + 1) * 128, :])
        b = nl.load(x[(i + 1) * 128:(i + 2) * 128, :])
        nl.store(out[i], value=nl.add(a, b))
    return out


@nki.jit
def written_between(x, y):
    """The second load's tile is also written by a computation: not a plain repeat."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.load(x)
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    b[...] = nl.load(x)
    b[...] = nl.add(b, nl.load(y))
    nl.store(out, value=nl.add(a, b))
    return out


def test_repeats_across_python_iterations_and_rewritten_tiles_are_left_alone():
    x = np.random.default_rng(2).standard_normal((512, 512)).astype(F32)
    assert len(loads(sliding_rows, (x,), TRN1)) == len(loads(sliding_rows, (x,), OFF)) == 6
    y = x[:128].copy()
    assert len(loads(written_between, (y, y), TRN1)) == 3
    res = ncs.simulate(written_between, y, y)
    np.testing.assert_allclose(res.outputs[0], 3 * y, rtol=1e-6)


def test_merging_is_deterministic():
    args = rope_args()
    runs = [ncs.simulate(rotate_halves, *args, functional=False) for _ in range(2)]
    assert runs[0].latency_ns == runs[1].latency_ns
    assert runs[0].events.equals(runs[1].events)
