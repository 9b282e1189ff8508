"""Dependency edges and buffer rings (schedule.py): twin hazard tests (overlapping regions give
an edge, disjoint slices of one tensor do not), pruning, accumulation chains, rings, capacity."""

from __future__ import annotations


import pytest
from programs import Builder, acc

from neuroncore_sim.config import TRN1, override
from neuroncore_sim.errors import CapacityError
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.compiler.schedule import RAW, WAR, WAW

ALL = slice(None)


#: the copies of these programs are the instructions under test, not temporaries to fold
NO_FOLD = override(TRN1, {"compiler": {"fold_copies": False}}, "tests")


def deps(program, instance: int = 0) -> dict[int, tuple[tuple[int, int], ...]]:
    return compile_program(program, NO_FOLD).instances[instance].deps


def two_ops(first_region, second_region, first_writes=True, second_writes=False,
            engines=("vector", "scalar")):
    """x written/read by op 0 on region 1, then op 1 reads/writes region 2."""
    b = Builder()
    x = b.tensor("x", (128, 512), "float32", "sbuf", site=1)
    o = [b.tensor(f"o{i}", (128, 512), "float32", "sbuf", site=10 + i) for i in range(2)]
    s = [b.tensor(f"s{i}", (128, 512), "float32", "sbuf", site=20 + i) for i in range(2)]
    for i, (region, writes) in enumerate(((first_region, first_writes),
                                          (second_region, second_writes))):
        rows, cols = region
        sub = acc(x, rows, cols)
        n_r = sub.shape[0]
        n_c = sub.shape[1]
        if writes:
            b.op("tensor_copy", engines[i], out=sub, src=acc(s[i], slice(0, n_r), slice(0, n_c)))
        else:
            b.op("tensor_copy", engines[i], out=acc(o[i], slice(0, n_r), slice(0, n_c)), src=sub)
    return deps(b.program)


@pytest.mark.parametrize("kind, w1, w2", [(RAW, True, False), (WAR, False, True),
                                          (WAW, True, True)])
def test_overlapping_regions_give_an_edge(kind, w1, w2):
    assert two_ops((slice(0, 64), ALL), (slice(32, 96), ALL), w1, w2) == {1: ((0, kind),)}
    assert two_ops((ALL, slice(0, 256)), (ALL, slice(255, 512)), w1, w2) == {1: ((0, kind),)}


@pytest.mark.parametrize("w1, w2", [(True, False), (False, True), (True, True)])
def test_disjoint_slices_of_one_tensor_give_no_edge(w1, w2):
    assert two_ops((slice(0, 64), ALL), (slice(64, 128), ALL), w1, w2) == {}
    assert two_ops((ALL, slice(0, 256)), (ALL, slice(256, 512)), w1, w2) == {}


def test_read_after_read_gives_no_edge():
    assert two_ops((ALL, ALL), (ALL, ALL), False, False) == {}


def test_same_engine_keeps_raw_only():
    eng = ("vector", "vector")
    assert two_ops((ALL, ALL), (ALL, ALL), True, False, eng) == {1: ((0, RAW),)}
    assert two_ops((ALL, ALL), (ALL, ALL), False, True, eng) == {}
    assert two_ops((ALL, ALL), (ALL, ALL), True, True, eng) == {}


def test_covered_writes_are_pruned():
    """write, overwrite, read: the read depends on the last writer only."""
    b = Builder()
    x = b.tensor("x", (128, 64), "float32", "sbuf", site=1)
    y = b.tensor("y", (128, 64), "float32", "sbuf", site=2)
    b.op("memset", "vector", out=acc(x), attrs={"value": 0})
    b.op("memset", "gpsimd", out=acc(x), attrs={"value": 1})
    b.op("tensor_copy", "scalar", out=acc(y), src=acc(x))
    assert deps(b.program) == {1: ((0, WAW),), 2: ((1, RAW),)}


def test_partial_overwrite_keeps_the_uncovered_writer():
    b = Builder()
    x = b.tensor("x", (128, 64), "float32", "sbuf", site=1)
    y = b.tensor("y", (128, 64), "float32", "sbuf", site=2)
    b.op("memset", "vector", out=acc(x), attrs={"value": 0})
    b.op("memset", "gpsimd", out=acc(x, slice(0, 64)), attrs={"value": 1})
    b.op("tensor_copy", "scalar", out=acc(y), src=acc(x))
    assert deps(b.program)[2] == ((0, RAW), (1, RAW))


def test_accumulation_chain_stays_on_tensor_engine():
    b = Builder()
    ps = b.tensor("ps", (128, 512), "float32", "psum", site=1)
    mv = b.tensor("mv", (128, 512), "bfloat16", "sbuf", site=2)
    sts = [b.tensor(f"st{i}", (128, 128), "bfloat16", "sbuf", site=3) for i in range(4)]
    out = b.tensor("out", (128, 512), "float32", "sbuf", site=4)
    for i in range(4):
        b.matmul(acc(ps), acc(sts[i]), acc(mv), accumulate=i > 0)
    b.op("tensor_copy", "vector", out=acc(out), src=acc(ps))
    d = deps(b.program)
    assert d[1] == ((0, RAW),) and d[2] == ((1, RAW),) and d[3] == ((2, RAW),)
    assert d[4] == ((3, RAW),)  # only the last matmul of the chain


def test_stationary_reuse_skips_load_stationary_unless_rewritten():
    b = Builder()
    ps = b.tensor("ps", (128, 512), "float32", "psum", site=1)
    mv = b.tensor("mv", (128, 512), "bfloat16", "sbuf", site=2)
    st = b.tensor("st", (128, 128), "bfloat16", "sbuf", site=3)
    b.matmul(acc(ps), acc(st), acc(mv))
    b.matmul(acc(ps), acc(st), acc(mv), accumulate=True)
    b.op("memset", "vector", out=acc(st), attrs={"value": 0})
    b.matmul(acc(ps), acc(st), acc(mv), accumulate=True)
    b.matmul(acc(ps), acc(st, ALL, slice(0, 64)), acc(mv), accumulate=True)
    sched = compile_program(b.program, NO_FOLD).instances[0]
    assert sched.ls_skip == frozenset({1})
    assert sched.ls_deps[3] == (2,)


def loop_program(n_iter: int, ring: bool, tile_cols: int = 512):
    """load x -> vector copy to y -> store y, n_iter times. ring=False reuses one x and one y
    tensor (a single buffer each); ring=True allocates new tiles at the same two sites."""
    b = Builder()
    single = (b.tensor("x", (128, tile_cols), "float32", "sbuf", site=1),
              b.tensor("y", (128, tile_cols), "float32", "sbuf", site=2))
    for i in range(n_iter):
        h = b.tensor(f"h{i}", (128, tile_cols), "float32", "hbm")
        o = b.tensor(f"o{i}", (128, tile_cols), "float32", "hbm", kind="output")
        if ring:
            x = b.tensor(f"x{i}", (128, tile_cols), "float32", "sbuf", site=1)
            y = b.tensor(f"y{i}", (128, tile_cols), "float32", "sbuf", site=2)
        else:
            x, y = single
        b.dma(acc(x), acc(h))
        b.op("tensor_copy", "vector", out=acc(y), src=acc(x))
        b.dma(acc(o), acc(y))
    return b.program


def test_ring_of_four_buffers_reuses_slots_in_order():
    sched = compile_program(loop_program(8, ring=True), NO_FOLD).instances[0]
    assert [(r.site, r.tiles, r.live_max, r.buffers) for r in sched.rings] == [
        ("kernel.py:1", 8, 1, 4), ("kernel.py:2", 8, 1, 4)]
    # Load of iteration 4 (instruction 12) reuses iteration 0's x: waits for its writer (0,
    # DMAs are not in order) and its reader (1).
    assert sched.deps[12] == ((0, WAW), (1, WAR))
    # Loads 1..3 are free to start at once.
    assert all(i not in sched.deps for i in (3, 6, 9))


def test_single_buffer_serialises_the_loop():
    d = compile_program(loop_program(3, ring=False), NO_FOLD).instances[0].deps
    assert d[3] == ((0, WAW), (1, WAR))  # next load waits for the copy that read x
    assert d[4] == ((2, WAR), (3, RAW))  # next copy waits for the store that read y


def test_ring_grows_to_the_live_maximum():
    b = Builder()
    tiles = [b.tensor(f"t{i}", (128, 64), "float32", "sbuf", site=1) for i in range(6)]
    out = b.tensor("out", (128, 64), "float32", "sbuf", site=2)
    for t in tiles:
        b.op("memset", "vector", out=acc(t), attrs={"value": 0})
    for t in tiles:
        b.op("tensor_tensor", "vector", out=acc(out), data1=acc(out), data2=acc(t),
             attrs={"op": "add"})
    ring = compile_program(b.program, NO_FOLD).instances[0].rings[0]
    assert (ring.live_max, ring.buffers) == (6, 6)


def looped_rings(*kib: int) -> list[tuple[int, int]]:
    """(buffers, KiB) of the rings of one looped SBUF allocation per size in ``kib`` (8 tiles
    each, one live at a time)."""
    b = Builder()
    for i in range(8):
        for site, size in enumerate(kib, start=1):
            t = b.tensor(f"t{site}_{i}", (128, size * 256), "float32", "sbuf", site=site)
            b.op("memset", "vector", out=acc(t), attrs={"value": 0})
    return [(r.buffers, r.slot_bytes // 1024) for r in compile_program(b.program, NO_FOLD)
            .instances[0].rings]


def test_rings_shrink_most_spare_buffers_first():
    # 4 + 4 need 320 KiB of 176: shrinking the bigger ring first would give (1, 4); the ring
    # with the most buffers above its live maximum goes first, so both stay double-buffered.
    assert looped_rings(60, 20) == [(2, 60), (2, 20)]
    assert looped_rings(40, 20, 20) == [(2, 40), (2, 20), (2, 20)]
    # 100 KiB must be single-buffered; the small ring's earlier shrinks are then undone
    assert looped_rings(100, 10) == [(1, 100), (4, 10)]


def test_when_double_buffering_does_not_fit_the_cheapest_ring_loses_it():
    # 2 + 2 need 180 KiB: single-buffering the 10 KiB ring is enough (170 KiB), and exposes a
    # 10 KiB load per iteration instead of an 80 KiB one.
    assert looped_rings(80, 10) == [(2, 80), (1, 10)]
    assert looped_rings(100, 30) == [(1, 100), (2, 30)]  # (2, 1) would need 230 KiB


def test_equal_rings_shrink_to_fit():
    b = Builder()
    for site in (1, 2):
        for i in range(8):  # 8 tiles of 40 KiB, one live at a time: ring 4 = 160 KiB
            t = b.tensor(f"t{site}_{i}", (128, 10240), "float32", "sbuf", site=site)
            b.op("memset", "vector", out=acc(t), attrs={"value": 0})
    rings = compile_program(b.program, NO_FOLD).instances[0].rings
    assert [r.buffers for r in rings] == [2, 2]  # 4 x 40 KiB = 160 KiB <= 176 KiB
    assert sum(r.buffers * r.slot_bytes for r in rings) <= TRN1.sbuf_usable_bytes_per_partition


def test_capacity_error_names_sites_and_bytes():
    b = Builder()
    big = [b.tensor(f"t{i}", (128, 25600), "float32", "sbuf", site=7 + i) for i in range(2)]
    for t in big:
        b.op("memset", "vector", out=acc(t), attrs={"value": 0})
    b.op("tensor_tensor", "vector", out=acc(big[0]), data1=acc(big[0]), data2=acc(big[1]),
         attrs={"op": "add"})
    with pytest.raises(CapacityError) as e:
        compile_program(b.program, NO_FOLD)
    msg = str(e.value)
    assert "kernel.py:7" in msg and "kernel.py:8" in msg
    assert "204800" in msg and str(TRN1.sbuf_usable_bytes_per_partition) in msg


def test_psum_tiles_take_whole_banks():
    b = Builder()
    ps = [b.tensor(f"p{i}", (128, 600), "float32", "psum", site=1) for i in range(4)]
    for p in ps:  # 2400 B per partition -> 2 banks each; 4 live -> 8 banks: fits
        b.op("memset", "vector", out=acc(p), attrs={"value": 0})
    out = b.tensor("o", (128, 600), "float32", "sbuf", site=2)
    for p in ps:
        b.op("tensor_copy", "vector", out=acc(out), src=acc(p))
    sched = compile_program(b.program, NO_FOLD)
    assert sched.instances[0].rings[0].slot_bytes == 4096 and sched.warnings == ()


def test_psum_over_its_banks_spills_whole_tiles_to_sbuf():
    b = Builder()
    ps = [b.tensor(f"p{i}", (128, 600), "float32", "psum", site=1) for i in range(4)]
    extra = b.tensor("p_extra", (128, 16), "float32", "psum", site=3)
    src = b.tensor("s", (128, 600), "float32", "sbuf", site=5)
    b.op("memset", "vector", out=acc(src), attrs={"value": 0})
    for p in ps + [extra]:  # 4 x 2 banks + 1 live at once: 9 banks, holding computed values
        # (a tile only memsets wrote is rematerialised by them instead: test_spill_remat.py)
        view = acc(src) if p is not extra else acc(src, slice(None), slice(0, 16))
        b.op("tensor_copy", "vector", out=acc(p), src=view)
    out = b.tensor("o", (128, 600), "float32", "sbuf", site=2)
    for p in ps:
        b.op("tensor_copy", "vector", out=acc(out), src=acc(p))
    small = b.tensor("o2", (128, 16), "float32", "sbuf", site=4)
    b.op("tensor_copy", "vector", out=acc(small), src=acc(extra))
    # the compiler spills a tile to SBUF (placement.py): VectorE copies out and back
    sched = compile_program(b.program, NO_FOLD)
    assert [str(w).split(": ", 1)[1][:22] for w in sched.warnings] == ["PSUM over-subscribed: "]
    spills = [i for i in sched.instances[0].instructions if i.attrs.get("spill")]
    assert [i.attrs["spill"] for i in spills] == ["psum_spill_save", "psum_spill_reload"]
    assert all(i.opcode.value == "tensor_copy" and i.engine.value == "vector" for i in spills)
    assert spills[0].srcs["src"].space.value == "psum" and spills[0].out.space.value == "sbuf"


def test_instances_are_scheduled_separately():
    b = Builder()
    x = b.tensor("x", (128, 64), "float32", "sbuf", site=1)
    y = b.tensor("y", (128, 64), "float32", "sbuf", site=2)
    for inst in range(3):
        b.op("memset", "vector", out=acc(x), attrs={"value": inst}, instance=inst)
        b.op("tensor_copy", "scalar", out=acc(y), src=acc(x), instance=inst)
    sched = compile_program(b.program, NO_FOLD)
    assert [s.instance for s in sched.instances] == [0, 1, 2]
    assert [s.deps for s in sched.instances] == [{1: ((0, RAW),)}, {3: ((2, RAW),)},
                                                 {5: ((4, RAW),)}]


def test_big_hbm_tensor_hazards_across_row_buckets():
    """Tensors with many rows index live accesses by row blocks; edges are unchanged."""
    b = Builder()
    big = b.tensor("big", (4096, 64), "float32", "hbm", kind="output")
    s = b.tensor("s", (128, 64), "float32", "sbuf", site=1)
    b.op("memset", "vector", out=acc(s), attrs={"value": 0})
    b.dma(acc(big, slice(100, 228)), acc(s))        # rows 100..227: buckets 0 and 1
    b.dma(acc(s), acc(big, slice(200, 328)))        # overlaps rows 200..227 (bucket 1)
    b.dma(acc(s, slice(0, 100)), acc(big, slice(0, 100)))  # disjoint rows
    b.dma(acc(big, slice(0, 4096, 2)), acc(b.tensor("h", (2048, 64), "float32", "hbm")))
    d = deps(b.program)
    assert d[2] == ((0, WAW), (1, RAW))
    assert d[3] == ((2, WAW),)  # op 2's write of s covered op 0's; big rows 0..99 untouched
    assert [j for j, _ in d[4]] == [1, 2, 3]  # strided write over everything


