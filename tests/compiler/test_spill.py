"""Compiler-managed SBUF: block tensors allocated per block by live range, spills to HBM when
the tiles live at once exceed SBUF (SpillWarning, spill DMAs in the timeline, summary fields),
and what stays a CapacityError (one instruction's own tiles, direct allocation)."""

from __future__ import annotations

import dataclasses
import inspect
import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim import report
from neuroncore_sim.config import TRN1
from programs import AS_WRITTEN
from neuroncore_sim.errors import AllocationWarning, CapacityError, KernelError, SpillWarning

F32 = np.float32
HERE = os.path.basename(__file__)


def line(kernel, mark: str) -> str:
    """``file.py:LINE`` of the first line of ``kernel`` containing ``mark``."""
    src, start = inspect.getsourcelines(kernel)
    return f"{HERE}:{start + next(i for i, s in enumerate(src) if mark in s)}"


def simulate_quietly(kernel, *args, **kw):
    """Simulate, failing on any warning (a kernel that fits must not warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return ncs.simulate(kernel, *args, **{"config": AS_WRITTEN, **kw})


# --- a block tensor that fits by live range ---------------------------------------------------
def blocked_scale(a, out):
    """A (4, 8, 128, 2048) fp32 block tensor: 256 KiB per partition in all, more than SBUF,
    but each block lives from its load to its multiply."""
    buf = nl.ndarray((4, 8, nl.par_dim(128), 2048), dtype=nl.float32, buffer=nl.sbuf)  # BLOCKS
    for i in nl.affine_range(4):
        for j in nl.affine_range(8):
            r = (i * 8 + j) * 128
            buf[i, j] = nl.load(a[r:r + 128, :])
            nl.store(out[r:r + 128, :], value=nl.multiply(buf[i, j], 2.0))


def test_block_tensor_larger_than_sbuf_fits_by_live_range():
    a = np.random.default_rng(0).standard_normal((4 * 8 * 128, 2048)).astype(F32)
    out = np.zeros_like(a)
    res = simulate_quietly(blocked_scale, a, out)
    np.testing.assert_allclose(out, 2 * a)
    ev = res.events
    assert not ev.opcode.isin(["spill_save", "spill_reload"]).any()
    sbuf = res.summary()["memory"]["sbuf"]
    assert sbuf["spill_save_bytes"] == 0 and sbuf["spill_reload_bytes"] == 0
    assert sbuf["spill_sites"] == {}
    # per block: at most a few 8 KiB blocks live at once, not the whole 256 KiB
    assert sbuf["peak_bytes_per_partition"] <= sbuf["capacity_bytes_per_partition"]
    assert sbuf["peak_sites"][line(blocked_scale, "# BLOCKS")] < 256 * 1024
    ncs.simulate(blocked_scale, a, out, timing=False)  # and no CapacityError without timing


def zeros_blocks(a, out):
    """``nl.zeros`` with leading block dims: one memset per block, each block its own tile."""
    acc = nl.zeros((4, 4, nl.par_dim(128), 4096), dtype=nl.float32)  # ZEROS: 256 KiB in all
    for i in nl.affine_range(4):
        for j in nl.affine_range(4):
            r = (i * 4 + j) * 128
            acc[i, j] += nl.load(a[r:r + 128, :])
            nl.store(out[r:r + 128, :], value=acc[i, j])


def test_zeros_with_block_dims_is_one_memset_per_block():
    a = np.random.default_rng(1).standard_normal((16 * 128, 4096)).astype(F32)
    out = np.zeros_like(a)
    # The memsets run first, in program order, so every block is live from the declaration:
    # 256 KiB, which spills (docs/model.md: live ranges follow program order).
    with pytest.warns(SpillWarning, match=line(zeros_blocks, "# ZEROS")):
        res = ncs.simulate(zeros_blocks, a, out, config=AS_WRITTEN)
    np.testing.assert_allclose(out, a)
    memsets = [i for i in res.program.instructions if i.opcode.value == "memset"]
    assert len(memsets) == 16
    assert {(m.out.col_lo, m.out.col_hi) for m in memsets} == {
        (b * 4096, (b + 1) * 4096) for b in range(16)}


def two_phases(a, out):
    """Two phases of two 80 KiB tiles each: four sites whose rings (320 KiB at their live
    maxima) exceed SBUF, but at most 160 KiB is live at once."""
    x = nl.load(a[0:128, :])
    y = nl.multiply(x, 2.0)  # FIRST READER
    nl.store(out[0:128, :], value=y)
    z = nl.load(a[128:256, :])  # SECOND LOAD
    w = nl.multiply(z, 3.0)
    nl.store(out[128:256, :], value=w)


def test_sites_that_fit_only_by_live_range_place_without_spilling():
    a = np.random.default_rng(5).standard_normal((256, 20480)).astype(F32)
    out = np.zeros_like(a)
    res = simulate_quietly(two_phases, a, out)
    np.testing.assert_allclose(out, np.concatenate([2 * a[:128], 3 * a[128:]]))
    assert res.summary()["memory"]["sbuf"]["spill_save_bytes"] == 0
    # the second phase's load takes the memory of the first phase's tiles: it waits for them
    ev = res.events
    first_reader = ev[ev.source == line(two_phases, "# FIRST READER")]
    second_load = ev[(ev.source == line(two_phases, "# SECOND LOAD"))]
    assert second_load.start_ns.min() >= first_reader.end_ns.max()


# --- a kernel that truly spills -------------------------------------------------------------
COLS = 12288  # one [128, 12288] fp32 tile = 48 KiB per partition
N = 5  # five live at once: 240 KiB > 176 KiB


def spilling_sum(a, out):
    """Computes five 48 KiB tiles, then sums them: all five are live until the sum reads them
    (computed, so a spilled one must be saved: its value exists nowhere else)."""
    tiles = []
    for k in range(N):
        tiles.append(nl.multiply(nl.load(a[k * 128:(k + 1) * 128, :]), 1.0))  # LOADS
    acc = nl.add(tiles[0], tiles[1])
    for k in range(2, N):
        acc = nl.add(acc, tiles[k])
    nl.store(out, value=acc)


def _spill_inputs():
    a = np.random.default_rng(2).standard_normal((N * 128, COLS)).astype(F32)
    return a, np.zeros((128, COLS), F32)


def test_over_subscribed_sbuf_spills_with_warning_dmas_and_summary():
    a, out = _spill_inputs()
    with pytest.warns(SpillWarning) as caught:
        res = ncs.simulate(spilling_sum, a, out, config=AS_WRITTEN)
    np.testing.assert_allclose(out, a.reshape(N, 128, COLS).sum(axis=0), rtol=1e-5)
    msg = str(caught[0].message)
    assert caught[0].filename == __file__  # shown at the simulate() call
    site = line(spilling_sum, "# LOADS")
    assert msg.startswith(f"{site}: SBUF over-subscribed")
    assert "180224 available" in msg and f"{site} (" in msg
    ev = res.events
    saves, reloads = ev[ev.opcode == "spill_save"], ev[ev.opcode == "spill_reload"]
    assert len(saves) and len(reloads)
    assert set(saves.source) | set(reloads.source) == {site}  # shown at the allocation site
    sbuf = res.summary()["memory"]["sbuf"]
    assert sbuf["spill_save_bytes"] == saves.nbytes.sum() > 0
    assert sbuf["spill_reload_bytes"] == reloads.nbytes.sum() > 0
    assert sbuf["spill_sites"] == {site: sbuf["spill_save_bytes"] + sbuf["spill_reload_bytes"]}
    tile = 128 * COLS * 4
    assert sbuf["spill_save_bytes"] % tile == 0  # whole tiles are spilled
    assert f"spills to HBM {sbuf['spill_save_bytes']} bytes" in msg
    # The same program on a core with SBUF for all of it: no spill, and faster.
    roomy = dataclasses.replace(AS_WRITTEN, sbuf_bytes_per_partition=512 * 1024)
    fast = simulate_quietly(spilling_sum, a, np.zeros_like(out), config=roomy)
    assert fast.summary()["memory"]["sbuf"]["spill_save_bytes"] == 0
    assert res.latency_ns > fast.latency_ns
    # spill DMAs are ordered: each reload runs after its tile's save
    assert reloads.start_ns.min() >= saves.end_ns.min()
    # the text summary and the stalls name them
    text = report.summary_text(res)
    assert (f"spilled to HBM: {sbuf['spill_save_bytes']:,} bytes saved, "
            f"{sbuf['spill_reload_bytes']:,} reloaded") in text
    producers = {s["producer"] for s in res.summary()["top_stalls"]}
    assert f"spill_reload at {site}" in producers


def loaded_sum(a, out):
    """Loads five 48 KiB tiles, then sums them: the tiles hold kernel inputs."""
    tiles = [nl.load(a[k * 128:(k + 1) * 128, :]) for k in range(N)]  # INPUT LOADS
    acc = nl.add(tiles[0], tiles[1])
    for k in range(2, N):
        acc = nl.add(acc, tiles[k])
    nl.store(out, value=acc)


def test_tiles_loaded_from_inputs_are_reloaded_not_saved():
    # The compiler rematerialises an evicted tile that holds an unchanged kernel input: it loads
    # it again from where it came, with no spill save.
    a, out = _spill_inputs()
    with pytest.warns(SpillWarning, match="SBUF over-subscribed"):
        res = ncs.simulate(loaded_sum, a, out, config=AS_WRITTEN)
    np.testing.assert_allclose(out, a.reshape(N, 128, COLS).sum(axis=0), rtol=1e-5)
    sbuf = res.summary()["memory"]["sbuf"]
    assert sbuf["spill_save_bytes"] == 0
    assert sbuf["spill_reload_bytes"] % (128 * COLS * 4) == 0 and sbuf["spill_reload_bytes"] > 0
    # and it costs less than spilling computed tiles of the same size (no saves)
    with pytest.warns(SpillWarning):
        computed = ncs.simulate(spilling_sum, a, np.zeros_like(out), config=AS_WRITTEN)
    assert computed.summary()["memory"]["sbuf"]["spill_save_bytes"] > 0
    assert res.latency_ns < computed.latency_ns


def test_spill_warning_also_without_timing():
    a, out = _spill_inputs()
    with pytest.warns(SpillWarning, match="SBUF over-subscribed"):
        ncs.simulate(spilling_sum, a, out, timing=False, config=AS_WRITTEN)
    np.testing.assert_allclose(out, a.reshape(N, 128, COLS).sum(axis=0), rtol=1e-5)


def mamba_like(delta, u, A, B, C, out):
    """A selective-scan shaped like a fused Mamba step at long sequence: per 128-channel tile,
    delta and u stay loaded across the states while each state makes [128, seq] temporaries."""
    ch, seq = delta.shape
    for c in nl.affine_range(ch // 128):
        acc = nl.zeros((nl.par_dim(128), seq), dtype=nl.float32)  # ACC
        d = nl.load(delta[c * 128:(c + 1) * 128, :])
        x = nl.load(u[c * 128:(c + 1) * 128, :])
        for s in nl.affine_range(A.shape[1]):
            decay = nisa.activation(op=nl.exp, data=d, scale=nl.load(A[c * 128:(c + 1) * 128, s]))
            dx = nisa.tensor_tensor(d, x, op=nl.multiply)
            inp = nisa.tensor_tensor(dx, nl.load(B[c * 128:(c + 1) * 128, s, :]), op=nl.multiply)
            h = nisa.tensor_tensor_scan(decay, inp, initial=0, op0=np.multiply, op1=np.add)
            acc[...] += nisa.tensor_tensor(h, nl.load(C[c * 128:(c + 1) * 128, s, :]),
                                           op=nl.multiply)
        nl.store(out[c * 128:(c + 1) * 128, :], acc)


def _mamba_ref(delta, u, A, B, C):
    out = np.zeros_like(delta)
    for s in range(A.shape[1]):
        decay = np.exp(delta * A[:, s:s + 1])
        inp = delta * u * B[:, s, :]
        h = np.zeros_like(delta)
        run = np.zeros(delta.shape[0], np.float64)
        for t in range(delta.shape[1]):
            run = decay[:, t] * run + inp[:, t]
            h[:, t] = run
        out += h * C[:, s, :]
    return out


@pytest.mark.parametrize("seq, spills", [(1024, False), (8192, True)])
def test_scan_kernel_spills_only_at_long_sequence(seq, spills):
    rng = np.random.default_rng(3)
    ch, st = 128, 2
    delta = (rng.random((ch, seq)) * 0.1).astype(F32)
    u = rng.standard_normal((ch, seq)).astype(F32)
    A = -rng.random((ch, st)).astype(F32)
    B = rng.standard_normal((ch, st, seq)).astype(F32)
    C = rng.standard_normal((ch, st, seq)).astype(F32)
    out = np.zeros((ch, seq), F32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ncs.simulate(mamba_like, delta, u, A, B, C, out, config=AS_WRITTEN)
    np.testing.assert_allclose(out, _mamba_ref(delta, u, A, B, C), rtol=2e-3, atol=2e-3)
    spill_warnings = [w for w in caught if issubclass(w.category, SpillWarning)]
    assert bool(spill_warnings) == spills
    reloaded = res.summary()["memory"]["sbuf"]["spill_reload_bytes"]
    # what is evicted comes back: reloaded, or rewritten by its memsets (a constant)
    moved = reloaded > 0 or any("rewrites" in str(w.message) for w in spill_warnings)
    assert moved == spills


# --- what stays a CapacityError -------------------------------------------------------------
def one_instruction_too_big():
    a = nl.zeros((nl.par_dim(128), 16384), dtype=nl.float32)  # 64 KiB
    b = nl.zeros((nl.par_dim(128), 16384), dtype=nl.float32)  # 64 KiB
    nisa.tensor_tensor(a, b, op=nl.add)  # BAD: reads 128 KiB and writes 64 KiB at once


def test_one_instruction_beyond_sbuf_is_a_capacity_error():
    for run in (lambda k: ncs.simulate(k), lambda k: ncs.simulate(k, timing=False)):
        with pytest.raises(CapacityError, match=r"tensor_tensor needs its tiles in SBUF at once "
                           r"\(spilling cannot help\); expected at most 180224 bytes per "
                           r"partition, found 196608") as info:
            run(one_instruction_too_big)
        assert info.value.loc == line(one_instruction_too_big, "# BAD")


def direct_overflow(a):
    t = nl.ndarray((2, nl.par_dim(128), 25000), dtype=nl.float32,  # BAD
                   buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    out = nl.ndarray((2, 128, 25000), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t[i] = nl.load(a[i])
        nl.store(out[i], value=t[i])
    return out


def test_direct_allocation_past_the_partition_is_a_warning_not_a_spill():
    """Directly allocated tiles are never spilled: one past the partition's end is an
    AllocationWarning at its declaration (the compiler checks no address bound)."""
    with pytest.warns(AllocationWarning, match=r"ncc.sbuf.mod_alloc: block \(1,\): a tile of "
                      r"100000 bytes per partition at byte_addr 100000 ends at 200000, past the "
                      r"196608 bytes of an SBUF partition") as caught:
        a = np.random.default_rng(2).standard_normal((2, 128, 25000)).astype(F32)
        res = ncs.simulate(direct_overflow, a, config=AS_WRITTEN)
    assert str(caught[0].message).startswith(line(direct_overflow, "# BAD"))
    assert not [w for w in caught if issubclass(w.category, SpillWarning)]
    np.testing.assert_array_equal(res.outputs[0], a)
    assert res.summary()["memory"]["sbuf"]["spill_save_bytes"] == 0


# --- mod_alloc as the reference defines it ---------------------------------------------------
class CountingAllocator:
    """Hands out SBUF byte ranges one after another with mod_alloc (the pattern of AWS's
    pipelined attention tutorial): an object kept across kernel calls keeps counting."""

    def __init__(self) -> None:
        self.offset = 0

    def take(self, nbytes: int, buffers: int = 1):
        addr = self.offset
        self.offset += nbytes * buffers
        return ncc.sbuf.mod_alloc(base_addr=addr, num_free_tiles=(buffers,))


def make_kernel(alloc: CountingAllocator):
    def kernel(a, out):
        t = nl.ndarray((2, nl.par_dim(128), 16384), dtype=nl.float32,  # ALLOC
                       buffer=alloc.take(16384 * 4, 2))
        for i in nl.affine_range(2):
            t[i] = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=t[i])
    return kernel


def test_mod_alloc_addresses_per_block_and_an_allocator_kept_across_calls():
    alloc = CountingAllocator()
    kernel = make_kernel(alloc)
    a = np.random.default_rng(4).standard_normal((256, 16384)).astype(F32)
    out = np.zeros_like(a)
    res = ncs.simulate(kernel, a, out, config=AS_WRITTEN)
    np.testing.assert_allclose(out, a)
    decl = next(t for t in res.program.tensors if t.placement is not None)
    # block i at base_addr + (i % num_free_tiles) * fdim_size bytes (the reference's formula)
    assert decl.placement.tiles == ((0, 0), (0, 65536))
    # a second call starts at base_addr 131072: its block (1,) lies past the partition (a
    # warning; the values are still right, each tile has storage of its own)
    out2 = np.zeros_like(a)
    with pytest.warns(AllocationWarning, match=r"block \(1,\): a tile of 65536 bytes per "
                      r"partition at byte_addr 196608 ends at 262144, past the 196608 bytes") as w:
        ncs.simulate(kernel, a, out2, config=AS_WRITTEN)
    assert str(w[0].message).startswith(line(kernel, "# ALLOC"))
    np.testing.assert_allclose(out2, a)


def bad_tile_counts():
    nl.ndarray((2, 3, nl.par_dim(128), 8), dtype=nl.float32,  # BAD
               buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2, 0)))


def test_mod_alloc_tile_counts_must_be_positive():
    with pytest.raises(KernelError, match=r"ncc.sbuf.mod_alloc num_free_tiles: expected a tuple "
                       r"of positive integer tile counts, found \(2, 0\)") as info:
        ncs.simulate(bad_tile_counts, timing=False, config=AS_WRITTEN)
    assert info.value.loc == line(bad_tile_counts, "# BAD")

    def int_not_tuple():
        nl.ndarray((2, nl.par_dim(128), 8), dtype=nl.float32,  # BAD
                   buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=2))
    with pytest.raises(KernelError, match=r"expected a tuple of positive integer tile counts, "
                       r"found 2") as info:
        ncs.simulate(int_not_tuple, timing=False, config=AS_WRITTEN)
    assert info.value.loc == line(int_not_tuple, "# BAD")


def test_mod_alloc_pairs_counts_with_block_dims_as_the_reference_does():
    def kernel():
        # no block dims and a one-count tuple (as AWS's tutorials write it): one tile at base
        one = nl.ndarray((nl.par_dim(128), 64), dtype=nl.float32, name="one",
                         buffer=ncc.sbuf.mod_alloc(base_addr=512, num_free_tiles=(1,)))
        # more counts than block dims: the reference's linearize still scales by the later ones
        more = nl.ndarray((2, nl.par_dim(128), 8), dtype=nl.float32, name="more",
                          buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2, 3)))
        one[...] = 0.0
        more[...] = 0.0
    prog = ncs.trace(kernel, functional=False).program
    tiles = {t.name: t.placement.tiles for t in prog.tensors if t.placement is not None}
    assert tiles["one"] == ((0, 512),)
    assert tiles["more"] == ((0, 0), (0, 3 * 32))  # block 1 -> (1 % 2) * 3 tiles of 32 B


# --- PSUM over its 8 banks: spilled to SBUF ---------------------------------------------------
def scores_then_max(q, k, out):
    """All q.T @ k score tiles first (a PSUM block tensor of 4 x 4 banks), then a row max per
    tile: 16 banks live at once."""
    qk = nl.ndarray((4, 4, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)  # SCORES
    qs, ks = nl.load(q), nl.load(k)
    for i in nl.affine_range(4):
        for j in nl.affine_range(4):
            qk[i, j] = nisa.nc_matmul(qs[:, i * 128:(i + 1) * 128], ks[:, j * 512:(j + 1) * 512])
    for i in nl.affine_range(4):
        m = nl.ndarray((nl.par_dim(128), 4), dtype=nl.float32)
        for j in nl.affine_range(4):
            m[:, j:j + 1] = nisa.tensor_reduce(op=nl.max, data=qk[i, j], axis=1, keepdims=True)
        nl.store(out[i * 128:(i + 1) * 128, :], value=m)


def test_psum_block_tensor_over_its_banks_spills_to_sbuf():
    rng = np.random.default_rng(6)
    q, k = rng.standard_normal((128, 512)).astype(F32), rng.standard_normal((128, 2048)).astype(F32)
    out = np.zeros((512, 4), F32)
    with pytest.warns(SpillWarning, match=line(scores_then_max, "# SCORES")
                      + r": PSUM over-subscribed: tiles live at once need up to 32768 bytes"):
        res = ncs.simulate(scores_then_max, q, k, out, config=AS_WRITTEN)
    want = (q.T @ k).reshape(512, 4, 512).max(axis=2)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    ev = res.events
    saves = ev[ev.opcode == "psum_spill_save"]
    assert len(saves) and set(saves.engine) == {"vector"}
    psum = res.summary()["memory"]["psum"]
    assert psum["spill_save_bytes"] == len(saves) * 128 * 2048  # whole one-bank tiles
    assert psum["spill_reload_bytes"] > 0
    assert psum["spill_sites"] == {line(scores_then_max, "# SCORES"):
                                   psum["spill_save_bytes"] + psum["spill_reload_bytes"]}


# --- property: spills happen exactly when the live tiles exceed SBUF, values stay right --------
TILE_COLS = 10240  # 40 KiB per partition in fp32


def make_sum_kernel(order):
    """Loads len(order) 40 KiB tiles, then adds them up in ``order``."""
    def kernel(a, out):
        tiles = [nl.load(a[k * 128:(k + 1) * 128, :]) for k in range(len(order))]
        acc = tiles[order[0]]
        for k in order[1:]:
            acc = nl.add(acc, tiles[k])
        nl.store(out, value=acc)
    return kernel


@settings(max_examples=12, deadline=None)
@given(st.permutations(range(5)).flatmap(
    lambda p: st.integers(2, 5).map(lambda n: [k for k in p if k < n])))
def test_spills_exactly_when_live_tiles_exceed_sbuf(order):
    n = len(order)
    a = np.random.default_rng(n).standard_normal((n * 128, TILE_COLS)).astype(F32)
    out = np.zeros((128, TILE_COLS), F32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ncs.simulate(make_sum_kernel(tuple(order)), a, out, config=AS_WRITTEN)
    np.testing.assert_allclose(out, a.reshape(n, 128, TILE_COLS).sum(axis=0), rtol=1e-5,
                               atol=1e-5)
    # at the first add every loaded tile is live, and so is its result: n + 1 tiles
    over = (n + 1) * TILE_COLS * 4 > 180224
    sbuf = res.summary()["memory"]["sbuf"]
    # (the tiles hold inputs: evicted ones are loaded again, never saved)
    assert sbuf["spill_save_bytes"] == 0
    assert (sbuf["spill_reload_bytes"] > 0) == over
    assert any(issubclass(w.category, SpillWarning) for w in caught) == over
    assert sbuf["spill_reload_bytes"] % (128 * TILE_COLS * 4) == 0


# --- the victim: furthest next use per byte moved ---------------------------------------------
def victim_choice(a, out):
    """At the second multiply four 48 KiB tiles are live (192 KiB > 176 KiB): one of ``c``
    (computed) and ``x`` (an input) must go. ``c``'s next use is the furthest (Belady's
    choice), but evicting it costs a save and a reload; ``x`` costs only a reload per byte at a
    use barely nearer, and is evicted instead."""
    c = nl.multiply(nl.load(a[0:128, :]), 2.0)
    x = nl.load(a[128:256, :])
    q = nl.multiply(nl.load(a[256:384, :]), 3.0)  # PRESSURE
    nl.store(out[128:256, :], value=q)
    r = nl.add(x, x)
    nl.store(out[0:128, :], value=nl.add(c, r))


def test_the_cheaper_victim_per_byte_is_evicted():
    a = np.random.default_rng(4).standard_normal((384, COLS)).astype(F32)
    out = np.zeros((256, COLS), F32)
    with pytest.warns(SpillWarning):
        res = ncs.simulate(victim_choice, a, out, config=AS_WRITTEN)
    np.testing.assert_allclose(out[:128], 2 * a[:128] + 2 * a[128:256], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[128:], 3 * a[256:], rtol=1e-5)
    sbuf = res.summary()["memory"]["sbuf"]
    assert sbuf["spill_save_bytes"] == 0
    assert sbuf["spill_reload_bytes"] == 128 * COLS * 4  # x, once


def loaded_sum_overwriting_input(a, out):
    """As loaded_sum, but the kernel also writes its input: a loaded tile is no longer a copy
    of something that stays in HBM, so an evicted one must be saved."""
    tiles = [nl.load(a[k * 128:(k + 1) * 128, :]) for k in range(N)]
    acc = nl.add(tiles[0], tiles[1])
    for k in range(2, N):
        acc = nl.add(acc, tiles[k])
    nl.store(a[0:128, :], value=acc)
    nl.store(out, value=acc)


def test_tiles_loaded_from_a_written_tensor_are_saved():
    a, out = _spill_inputs()
    want = a.reshape(N, 128, COLS).sum(axis=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ncs.simulate(loaded_sum_overwriting_input, a, out, config=AS_WRITTEN)
    assert any(issubclass(w.category, SpillWarning) for w in caught)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    assert res.summary()["memory"]["sbuf"]["spill_save_bytes"] > 0
