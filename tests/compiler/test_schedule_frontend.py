"""Schedule rules checked on front-end kernels: every access of a tile in a reused ring slot
waits for the slot's previous occupant, and a PSUM tile zeroed by ``nl.zeros`` then accumulated
into costs no VectorE memset (the compiler starts the accumulation group instead), also when a
multi-bank tile is filled bank by bank."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.config import TRN1
from neuroncore_sim.timing.events import is_dma_row
from neuroncore_sim.compiler.passes import compile_program


@nki.jit
def two_loads_per_tile(x):
    """Each iteration fills one [128, 2, 512] tile with two DMAs, then reads it for longer than
    the loads take (so, unchecked, the loads would run ahead of the ring). (The partition dim
    comes first: with block dims, ``(2, par_dim(128), 512)``, each block would be a tile of its
    own, filled by one DMA.)"""
    out = nl.ndarray((x.shape[0], 512), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.ndarray((nl.par_dim(128), 2, 512), dtype=x.dtype, buffer=nl.sbuf)
        t[:, 0, :] = nl.load(x[i * 128:(i + 1) * 128, 0:512])
        t[:, 1, :] = nl.load(x[i * 128:(i + 1) * 128, 512:1024])
        acc = nl.add(t[:, 0, :], t[:, 1, :])
        for _ in range(READS):
            acc = nl.add(acc, t[:, 1, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=acc)
    return out


READS = 8


def test_every_dma_into_a_reused_slot_waits_for_the_previous_tile():
    res = ncs.simulate(two_loads_per_tile, nt.tensor[[16 * 128, 1024], nl.float32],
                       functional=False)
    instrs = res.program.instructions
    loads = [i for i in instrs if i.opcode.value == "dma_copy" and i.out.space.value == "sbuf"]
    adds = [i for i in instrs if i.opcode.value == "tensor_tensor"][READS::READS + 1]  # last
    ring = next(r for r in compile_program(res.program, TRN1).instances[0].rings
                if r.tiles == len(adds) and r.space.value == "sbuf" and r.slot_bytes == 4096)
    start: dict[int, float] = {}
    end: dict[int, float] = {}
    for e in res.timing.events:
        start[e.instr_id] = min(start.get(e.instr_id, e.start_ns), e.start_ns)
        end[e.instr_id] = max(end.get(e.instr_id, e.end_ns), e.end_ns)
    for it in range(ring.buffers, len(adds)):
        reader_done = end[adds[it - ring.buffers].id]
        for load in loads[2 * it:2 * it + 2]:  # both loads, not only the first
            assert start[load.id] >= reader_done - 1e-6, (it, load.id)


@nki.jit
def zeroed_accumulators(lhsT, rhs):
    out = nl.ndarray((128, rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.load(lhsT)
    m = nl.load(rhs)
    for n in nl.affine_range(rhs.shape[1] // 512):
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        acc += nisa.nc_matmul(s, m[:, n * 512:(n + 1) * 512])
        nl.store(out[:, n * 512:(n + 1) * 512], value=nl.copy(acc))
    return out


@nki.jit
def zeroed_then_read(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    nl.store(out, value=nl.add(acc, nl.load(x)))
    return out


def test_psum_zeros_before_an_accumulation_cost_no_memset():
    res = ncs.simulate(zeroed_accumulators, nt.tensor[[128, 128], nl.bfloat16],
                       nt.tensor[[128, 2048], nl.bfloat16], functional=False)
    assert sum(i.opcode.value == "memset" for i in res.program.instructions) == 4  # recorded
    assert not [e for e in res.timing.events if e.opcode == "memset"]  # but not timed
    assert not [e for e in res.timing.events if e.engine == "vector" and not is_dma_row(e.engine)
                and e.opcode not in ("tensor_copy",)]


def test_psum_zeros_that_are_read_keep_their_memset():
    res = ncs.simulate(zeroed_then_read, nt.tensor[[128, 512], nl.float32], functional=False)
    assert [e.engine for e in res.timing.events if e.opcode == "memset"] == ["vector"]


def test_folded_zeros_do_not_make_psum_tiles_live_from_time_zero():
    # A folded memset never runs: the tile's life starts at its first matmul, so the memory
    # summary's PSUM peak stays within the banks the rings give it.
    from neuroncore_sim.program.ir import MemSpace
    from neuroncore_sim.timing.memory_use import tile_lives
    res = ncs.simulate(zeroed_accumulators, nt.tensor[[128, 128], nl.bfloat16],
                       nt.tensor[[128, 2048], nl.bfloat16], functional=False)
    psum = [x for x in tile_lives(res.program, res.timing, res.config) if x.space is MemSpace.PSUM]
    first_matmul = min(e.start_ns for e in res.timing.events  # its LoadStationary, if any
                       if e.opcode in ("load_stationary", "multiply_moving"))
    assert len(psum) == 4 and all(x.start_ns >= first_matmul for x in psum)
    assert res.summary()["memory"]["psum"]["peak_at_ns"] >= first_matmul


def test_folded_zeros_still_give_zeros_before_accumulating():
    lhsT = np.ones((128, 128), np.float32)
    rhs = np.ones((128, 1024), np.float32)
    res = ncs.simulate(zeroed_accumulators, lhsT, rhs)
    assert (res.outputs[0] == 128).all()


BANKS = 4


def banked_kernel(touch_first: str | None):
    """A [BANKS, 128, 512] PSUM tile zeroed by nl.zeros (one memset per block), then filled bank by bank by K-accumulating
    matmuls (blocked_free's pattern). ``touch_first`` makes bank 2 be touched before its first
    matmul: "read" (copied out) or "write" (a VectorE copy into it)."""

    @nki.jit
    def banked(lhsT, rhs):
        out = nl.ndarray((128, BANKS * 512), dtype=nl.float32, buffer=nl.shared_hbm)
        early = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        s = nl.load(lhsT)
        m = nl.load(rhs)
        acc = nl.zeros((BANKS, nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2):
            for b in nl.affine_range(BANKS):
                if k == 0 and b == 2 and touch_first == "read":
                    nl.store(early, value=nl.copy(acc[b]))
                if k == 0 and b == 2 and touch_first == "write":
                    acc[b] = nl.copy(m[:, 0:512], dtype=nl.float32)
                acc[b] += nisa.nc_matmul(s[k * 64:(k + 1) * 64, :],
                                         m[k * 64:(k + 1) * 64, b * 512:(b + 1) * 512])
        for b in nl.affine_range(BANKS):
            nl.store(out[:, b * 512:(b + 1) * 512], value=nl.copy(acc[b]))
        return (out, early) if touch_first == "read" else out  # (early is written then only)
    return banked


def _banked_run(touch_first: str | None):
    rng = np.random.default_rng(0)
    lhsT = rng.integers(-3, 4, (128, 128)).astype(np.float32)
    rhs = rng.integers(-3, 4, (128, BANKS * 512)).astype(np.float32)
    return ncs.simulate(banked_kernel(touch_first), lhsT, rhs), lhsT, rhs


def test_a_multi_bank_zero_tile_filled_bank_by_bank_costs_no_memset():
    res, lhsT, rhs = _banked_run(None)
    # recorded: one memset per block (bank)
    assert sum(i.opcode.value == "memset" for i in res.program.instructions) == BANKS
    assert not [e for e in res.timing.events if e.opcode == "memset"]  # but not timed
    np.testing.assert_array_equal(res.outputs[0], lhsT.T @ rhs)  # values: zeros, then sums


@pytest.mark.parametrize("touch_first", ["read", "write"])
def test_a_bank_touched_before_its_first_matmul_keeps_the_memset(touch_first):
    res, lhsT, rhs = _banked_run(touch_first)
    assert [e.engine for e in res.timing.events if e.opcode == "memset"] == ["vector"]
    want = lhsT.T @ rhs
    if touch_first == "read":
        np.testing.assert_array_equal(res.outputs[1], 0)  # the zeros were really there
    else:
        want[:, 1024:1536] += rhs[:, 0:512]
    np.testing.assert_array_equal(res.outputs[0], want)
