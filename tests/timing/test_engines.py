"""The simpy timing model: literal timelines of small programs, port sharing, pipelines with
and without buffer reuse, hypothesis properties and orderings the docs imply."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import AS_WRITTEN, Builder, acc

from neuroncore_sim.config import TRN1, override
from neuroncore_sim.timing.cost import roofline_ns
from neuroncore_sim.timing.events import is_dma_row
from neuroncore_sim.program.ir import Program
from neuroncore_sim.result import EVENT_COLUMNS, SimResult
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.timing.engines import simulate_timing

ALL = slice(None)
#: GHz; TensorE runs its documented cycles at tensor_sustained_fraction of 2.8 GHz
VEC, SCA, TEN = 1.12, 1.4, 2.8 * TRN1.tensor_sustained_fraction
SEM = TRN1.semaphore_latency_ns


#: the copies of these programs are the instructions under test, not temporaries to fold
UNFOLDED = override(TRN1, {"compiler": {"fold_copies": False}}, "tests")


def timeline(program: Program, config=UNFOLDED) -> list[tuple]:
    """(instr_id, engine, opcode, start, end, waited_on) of the compute events."""
    res = simulate_timing(program, config)
    return [(e.instr_id, e.engine, e.opcode, pytest.approx(e.start_ns), pytest.approx(e.end_ns),
             e.waited_on) for e in res.events if not is_dma_row(e.engine)]


def tiles(b: Builder, n: int, shape=(128, 512), dtype="float32", space="sbuf", first_site=1):
    return [b.tensor(f"t{first_site + i}", shape, dtype, space, site=first_site + i)
            for i in range(n)]


# --- literal timelines ---------------------------------------------------------------------------

def test_cross_engine_dependency_waits_for_pipeline_and_semaphore():
    b = Builder()
    x, y, z = tiles(b, 3)
    b.op("tensor_copy", "vector", out=acc(y), src=acc(x))
    b.op("activation", "scalar", out=acc(z), data=acc(y), attrs={"op": "exp"})
    t1 = 512 / VEC
    t2 = t1 + 60 / VEC + SEM
    assert timeline(b.program) == [
        (0, "vector", "tensor_copy", 0.0, t1, ""),
        (1, "scalar", "activation", t2, t2 + 512 / SCA, "vector#0"),
    ]


def test_independent_engines_run_in_parallel():
    b = Builder()
    x, y, z, w = tiles(b, 4)
    b.op("tensor_copy", "scalar", out=acc(y), src=acc(x))
    b.op("tensor_copy", "gpsimd", out=acc(w), src=acc(z))
    assert [t[3] for t in timeline(b.program)] == [0.0, 0.0]


def test_vector_and_gpsimd_share_the_sbuf_port():
    b = Builder()
    x, y, z, w = tiles(b, 4)
    b.op("tensor_copy", "vector", out=acc(y), src=acc(x))
    b.op("tensor_copy", "gpsimd", out=acc(w), src=acc(z))
    t = timeline(b.program)
    assert t[1][1:] == ("gpsimd", "tensor_copy", 512 / VEC, 512 / VEC + 512 / SCA, "port:sbuf")


def test_vector_and_scalar_share_the_psum_port_only():
    b = Builder()
    p, q = tiles(b, 2, space="psum")
    x, y, z, w = tiles(b, 4, first_site=10)
    b.op("tensor_copy", "vector", out=acc(y), src=acc(p))
    b.op("tensor_copy", "scalar", out=acc(w), src=acc(q))
    assert timeline(b.program)[1][3] == pytest.approx(512 / VEC)
    b2 = Builder()
    x, y, z, w = tiles(b2, 4)
    b2.op("tensor_copy", "vector", out=acc(y), src=acc(x))
    b2.op("tensor_copy", "scalar", out=acc(w), src=acc(z))
    assert timeline(b2.program)[1][3] == 0.0


def test_vector_static_overhead_for_dependent_back_to_back():
    b = Builder()
    x, y, z, w, v = tiles(b, 5, shape=(128, 32))
    b.op("tensor_copy", "vector", out=acc(y), src=acc(x))
    b.op("tensor_copy", "vector", out=acc(z), src=acc(y))   # depends on the one before
    b.op("tensor_copy", "vector", out=acc(v), src=acc(w))   # independent
    t0 = 64 / VEC
    t1 = t0 + (64 + 100) / VEC
    assert timeline(b.program) == [
        (0, "vector", "tensor_copy", 0.0, t0, ""),
        (1, "vector", "tensor_copy", t0, t1, ""),
        (2, "vector", "tensor_copy", t1, t1 + t0, ""),
    ]


def test_single_matmul_timeline():
    b = Builder()
    st_, mv = tiles(b, 2, shape=(128, 128), dtype="bfloat16")
    ps, = tiles(b, 1, space="psum", first_site=5)
    b.matmul(acc(ps), acc(st_), acc(mv))
    ls = 32 / TEN
    assert timeline(b.program) == [
        (0, "tensor_ls", "load_stationary", 0.0, ls, ""),
        (0, "tensor", "multiply_moving", ls, ls + 128 / TEN, "load_stationary"),
    ]


def test_accumulation_chain_is_back_to_back_then_copy_waits_for_latency():
    b = Builder()
    sts = [b.tensor(f"st{i}", (128, 128), "bfloat16", "sbuf", site=1) for i in range(4)]
    mv, = tiles(b, 1, dtype="bfloat16", first_site=2)
    ps, = tiles(b, 1, space="psum", first_site=3)
    out, = tiles(b, 1, first_site=4)
    for i in range(4):
        b.matmul(acc(ps), acc(sts[i]), acc(mv), accumulate=i > 0)
    b.op("tensor_copy", "vector", out=acc(out), src=acc(ps))
    ls, mm = 32 / TEN, 512 / TEN
    t = timeline(b.program)
    mms = [e for e in t if e[1] == "tensor"]
    assert [e[3] for e in mms] == [pytest.approx(ls + k * mm) for k in range(4)]
    lss = [e for e in t if e[1] == "tensor_ls"]
    assert [e[3] for e in lss] == [pytest.approx(x) for x in (0, ls, ls + mm, ls + 2 * mm)]
    copy_start = ls + 4 * mm + TRN1.tensor_pipeline_latency_ns + SEM
    assert t[-1] == (4, "vector", "tensor_copy", copy_start, copy_start + 512 / VEC,
                     "tensor#3")


def test_single_dma_literal():
    b = Builder()
    h = b.tensor("h", (128, 512), "float32", "hbm")
    s, = tiles(b, 1)
    b.dma(acc(s), acc(h))
    res = simulate_timing(b.program, TRN1)
    assert len(res.events) == 16
    per_transfer = 8 * max(TRN1.dma_buffer_overhead_ns, 2048 / TRN1.dma_hbm_read_bytes_per_ns)
    assert [(e.start_ns, e.end_ns) for e in res.events] == [
        (1300.0, pytest.approx(1300.0 + per_transfer))] * 16
    assert sorted(e.engine for e in res.events) == sorted(f"dma{i}" for i in range(16))


def pipeline(n_iter: int, ring: bool) -> Program:
    """load -> vector copy -> store per iteration of an affine_range loop; ring: new tiles per
    iteration at the same sites (ring of 4); else one x and one y tensor reused."""
    b = Builder()
    one = (b.tensor("x", (128, 512), "float32", "sbuf", site=1),
           b.tensor("y", (128, 512), "float32", "sbuf", site=2))
    for i in range(n_iter):
        b.iteration(i)
        h = b.tensor(f"h{i}", (128, 512), "float32", "hbm")
        o = b.tensor(f"o{i}", (128, 512), "float32", "hbm", kind="output")
        x, y = ((b.tensor(f"x{i}", (128, 512), "float32", "sbuf", site=1),
                 b.tensor(f"y{i}", (128, 512), "float32", "sbuf", site=2)) if ring else one)
        b.dma(acc(x), acc(h))
        b.op("tensor_copy", "vector", out=acc(y), src=acc(x))
        b.dma(acc(o), acc(y))
    return b.program


def test_pipeline_with_buffer_ring_overlaps_loads():
    transfer = 8 * 2048 / TRN1.dma_hbm_read_bytes_per_ns  # 2 KiB buffers read from HBM
    ring = simulate_timing(pipeline(8, ring=True), TRN1)
    single = simulate_timing(pipeline(8, ring=False), TRN1)
    first = {r: min(e.start_ns for e in res.events if e.instr_id == 3)
             for r, res in (("ring", ring), ("single", single))}
    # ring: load 1 is ready at once and only waits for the DMA engines (load 0's transfers)
    assert first["ring"] == pytest.approx(1300 + transfer)
    # single buffer: load 1 must wait until copy 0 has read x
    copy0_end = 1300 + transfer + SEM + 512 / VEC
    assert first["single"] == pytest.approx(copy0_end + SEM + 1300)
    assert ring.latency_ns < 0.7 * single.latency_ns  # the loads themselves now bind


def test_instances_run_serially():
    b = Builder()
    x, y = tiles(b, 2)
    for inst in range(3):
        b.op("tensor_copy", "vector", out=acc(y), src=acc(x), instance=inst)
    t = 512 / VEC
    assert [(e[3], e[4]) for e in timeline(b.program)] == [(0, t), (t, 2 * t), (2 * t, 3 * t)]


def test_sim_result_views():
    res = simulate_timing(pipeline(4, ring=True), TRN1)
    sim = SimResult(program=pipeline(4, ring=True), outputs=(), config=TRN1, timing=res)
    df = sim.events
    assert list(df.columns) == list(EVENT_COLUMNS)
    assert len(df) == len(res.events) and (df.duration_ns >= 0).all()
    s = sim.summary()
    assert s["latency_ns"] == res.latency_ns
    assert s["instructions"] == {"dma": 8, "vector": 4}
    assert s["dma_bytes"] == 8 * 128 * 512 * 4
    assert s["bottleneck"] == "dma"
    assert 0 < s["busy_percent"]["vector"] < 50


# --- properties ----------------------------------------------------------------------------------

COLS = st.sampled_from([(0, 64), (64, 64), (0, 128), (128, 128), (64, 128)])


@st.composite
def programs(draw) -> Program:
    b = Builder("random")
    sb = [b.tensor(f"s{i}", (128, 256), "bfloat16", "sbuf", site=1 + i) for i in range(4)]
    ps = [b.tensor(f"p{i}", (128, 256), "float32", "psum", site=10 + i) for i in range(2)]
    hb = [b.tensor(f"h{i}", (128, 256), "bfloat16", "hbm") for i in range(2)]
    out = b.tensor("out", (128, 256), "bfloat16", "hbm", kind="output")
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["load", "store", "copy", "tt", "matmul", "psum_copy"]))
        lo, w = draw(COLS)
        cols = slice(lo, lo + w)
        s1, s2 = draw(st.sampled_from(sb)), draw(st.sampled_from(sb))
        if kind == "load":
            b.dma(acc(s1, ALL, cols), acc(draw(st.sampled_from(hb)), ALL, cols))
        elif kind == "store":
            b.dma(acc(out, ALL, cols), acc(s1, ALL, cols))
        elif kind == "copy":
            eng = draw(st.sampled_from(["vector", "scalar", "gpsimd"]))
            b.op("tensor_copy", eng, out=acc(s2, ALL, cols), src=acc(s1, ALL, cols))
        elif kind == "tt":
            b.op("tensor_tensor", "vector", out=acc(s2, ALL, cols), data1=acc(s1, ALL, cols),
                 data2=acc(draw(st.sampled_from(sb)), ALL, cols), attrs={"op": "add"})
        elif kind == "matmul":
            b.matmul(acc(draw(st.sampled_from(ps)), ALL, cols), acc(s1, ALL, slice(0, 128)),
                     acc(s2, ALL, cols), accumulate=draw(st.booleans()))
        else:
            eng = draw(st.sampled_from(["vector", "scalar"]))
            b.op("tensor_copy", eng, out=acc(s2, ALL, cols),
                 src=acc(draw(st.sampled_from(ps)), ALL, cols))
    return b.program


# Derandomized: the same programs every run, so CI cannot meet a new counterexample by chance
# (a found one becomes an explicit test, as test_dma_issue_order_anomaly below).
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(programs())
def test_no_row_runs_two_things_at_once(program):
    res = simulate_timing(program, TRN1)
    rows: dict[str, list] = {}
    for e in res.events:
        rows.setdefault(e.engine, []).append(e)
    for evs in rows.values():
        evs.sort(key=lambda e: e.start_ns)
        for a, b in zip(evs, evs[1:]):
            assert b.start_ns >= a.end_ns - 1e-6


@SETTINGS
@given(programs())
def test_every_dependency_is_respected(program):
    res = simulate_timing(program, TRN1)
    sched = compile_program(program, TRN1).instances[0]
    main_start: dict[int, float] = {}
    ls_start: dict[int, float] = {}
    for e in res.events:
        target = ls_start if e.engine == "tensor_ls" else main_start
        target[e.instr_id] = min(target.get(e.instr_id, e.start_ns), e.start_ns)
    end = res.instruction_end_ns
    for c, edges in sched.deps.items():
        for p, _ in edges:
            assert main_start[c] >= end[p] - 1e-6
    for c, producers in sched.ls_deps.items():
        for p in producers:
            if c in ls_start:
                assert ls_start[c] >= end[p] - 1e-6


@SETTINGS
@given(programs())
def test_latency_at_least_roofline(program):
    res = simulate_timing(program, TRN1)
    assert res.latency_ns >= roofline_ns(program, TRN1) - 1e-6


@SETTINGS
@given(programs(), st.sampled_from(["bandwidth", "clock"]))
def test_more_bandwidth_or_faster_clock_is_never_slower(program, what):
    if what == "bandwidth":
        faster = dataclasses.replace(
            TRN1, dma_engine_bytes_per_ns=2 * TRN1.dma_engine_bytes_per_ns,
            dma_hbm_read_bytes_per_ns=2 * TRN1.dma_hbm_read_bytes_per_ns,
            dma_hbm_write_bytes_per_ns=2 * TRN1.dma_hbm_write_bytes_per_ns,
            hbm_bytes_per_ns=2 * TRN1.hbm_bytes_per_ns)
    else:
        faster = dataclasses.replace(TRN1, **{f"{e}_clock_hz": 1.5 * TRN1.clock_hz(e)
                                              for e in ("tensor", "vector", "scalar", "gpsimd")})
    assert (simulate_timing(program, faster).latency_ns
            <= simulate_timing(program, TRN1).latency_ns + 1e-6)


def anomaly_program() -> Program:
    """Found by the property above: doubling DMA bandwidth lengthens this straight-line
    program when DMAs issue as their data allows, because the load at 101+10 overtakes the one
    at 101+7 in the DMA queues. Shown at HBM reads of 6.96 B/ns per engine (SDK 2.20's
    effective rate; at 17 B/ns the generator finds no such program)."""
    b = Builder("anomaly")
    s = [b.tensor(f"s{i}", (128, 256), "bfloat16", "sbuf", site=1 + i) for i in range(4)]
    p0 = b.tensor("p0", (128, 256), "float32", "psum", site=10)
    h0 = b.tensor("h0", (128, 256), "bfloat16", "hbm")
    out = b.tensor("out", (128, 256), "bfloat16", "hbm", kind="output")
    c = lambda lo, hi: (ALL, slice(lo, hi))  # noqa: E731
    b.matmul(acc(p0, *c(0, 64)), acc(s[2], *c(0, 128)), acc(s[0], *c(0, 64)))
    b.dma(acc(s[0], *c(128, 256)), acc(h0, *c(128, 256)))
    b.op("tensor_copy", "vector", out=acc(s[0], *c(128, 256)), src=acc(s[0], *c(128, 256)))
    b.op("tensor_copy", "scalar", out=acc(s[1], *c(0, 64)), src=acc(s[0], *c(0, 64)))
    b.op("tensor_copy", "vector", out=acc(s[3], *c(0, 128)), src=acc(p0, *c(0, 128)))
    b.dma(acc(s[2], *c(64, 128)), acc(h0, *c(64, 128)))
    b.op("tensor_copy", "scalar", out=acc(s[2], *c(64, 128)), src=acc(s[0], *c(64, 128)))
    b.dma(acc(s[3], *c(0, 64)), acc(h0, *c(0, 64)))
    b.dma(acc(out, *c(0, 128)), acc(s[0], *c(0, 128)))
    b.dma(acc(s[3], *c(0, 64)), acc(h0, *c(0, 64)))
    b.dma(acc(s[0], *c(64, 128)), acc(h0, *c(64, 128)))
    return b.program


def _doubled_dma(base):
    return dataclasses.replace(base, dma_engine_bytes_per_ns=2 * base.dma_engine_bytes_per_ns,
                               dma_hbm_write_bytes_per_ns=2 * base.dma_hbm_write_bytes_per_ns,
                               hbm_bytes_per_ns=2 * base.hbm_bytes_per_ns)


def test_triggers_in_program_order_keep_faster_dmas_from_lengthening():
    """Its DMAs are one iteration's: their triggers issue in program order
    (compiler/dma_triggers.py), so the later load cannot overtake the earlier one."""
    base = dataclasses.replace(AS_WRITTEN, dma_hbm_read_bytes_per_ns=6.96)
    assert (simulate_timing(anomaly_program(), _doubled_dma(base)).latency_ns
            <= simulate_timing(anomaly_program(), base).latency_ns + 1e-6)


@pytest.mark.xfail(strict=True, reason="known anomaly: DMAs whose triggers are not ordered "
                   "(iterations the compiler interleaves) issue when their dependencies are "
                   "met, so faster DMAs can let a later DMA take the engines first "
                   "(docs/model.md, What we approximate)")
def test_dma_issue_order_anomaly():
    """The same program with its DMAs issued as their data allows, as the DMAs of interleaved
    affine_range iterations are."""
    base = dataclasses.replace(override(AS_WRITTEN, {"compiler": {"order_dma_triggers": False}},
                                        "tests"), dma_hbm_read_bytes_per_ns=6.96)
    assert (simulate_timing(anomaly_program(), _doubled_dma(base)).latency_ns
            <= simulate_timing(anomaly_program(), base).latency_ns + 1e-6)


@SETTINGS
@given(programs())
def test_deterministic(program):
    assert simulate_timing(program, TRN1).events == simulate_timing(program, TRN1).events


# --- orderings the docs imply --------------------------------------------------------------------

def dma_throughput(bytes_per_partition: int) -> float:
    elems = bytes_per_partition // 4
    b = Builder()
    k = 16
    dst = b.tensor("dst", (128, k * elems), "float32", "sbuf", site=1)
    for i in range(k):
        h = b.tensor(f"h{i}", (128, elems), "float32", "hbm")
        b.dma(acc(dst, ALL, slice(i * elems, (i + 1) * elems)), acc(h))
    res = simulate_timing(b.program, TRN1)
    return k * 128 * bytes_per_partition / (res.latency_ns - TRN1.dma_fixed_latency_ns)


def test_dma_load_rows_cost_their_bytes_above_the_descriptor_floor():
    # Loads read HBM at dma_hbm_read_bytes_per_ns per engine (fitted on the trn1 matmul
    # ladder, where 256 B and 1 KiB rows cost in proportion to their bytes); only rows below
    # dma_buffer_overhead_ns x that rate (~49 B) are descriptor-bound ([PERF fig29]: 7 ns).
    peak = 16 * TRN1.dma_hbm_read_bytes_per_ns
    assert dma_throughput(128) == pytest.approx(dma_throughput(2048), rel=0.02)
    assert dma_throughput(4096) == pytest.approx(peak, rel=0.02)
    assert dma_throughput(16) < 0.4 * peak


def matmul_stream(dtype: str, n_moving: int, count: int = 64) -> float:
    b = Builder()
    mv = b.tensor("mv", (128, n_moving), dtype, "sbuf", site=1)
    ps = b.tensor("ps", (128, n_moving), "float32", "psum", site=2)
    sts = [b.tensor(f"st{i}", (128, 128), dtype, "sbuf", site=3) for i in range(count)]
    for i, s in enumerate(sts):
        b.matmul(acc(ps), acc(s), acc(mv), accumulate=i > 0)
    no_cast = override(TRN1, {"compiler": {"auto_cast": "none"}}, "tests")  # fp32 runs as fp32
    return simulate_timing(b.program, no_cast).latency_ns


def test_bf16_matmul_stream_about_4x_faster_than_fp32():
    ratio = matmul_stream("float32", 512) / matmul_stream("bfloat16", 512)
    assert 3.9 < ratio <= 4.0


def test_short_moving_is_slower_per_flop():
    per_flop = {n: matmul_stream("bfloat16", n) / n for n in (32, 128, 512)}
    assert per_flop[32] > 1.5 * per_flop[128]
    assert per_flop[512] <= per_flop[128]


def tiled_product(n_moving: int, total: int = 2048) -> float:
    """[128x128] x [128 x total]: per moving tile load, matmul, PSUM copy, store."""
    b = Builder()
    hs = b.tensor("hs", (128, 128), "bfloat16", "hbm")
    hm = b.tensor("hm", (128, total), "bfloat16", "hbm")
    ho = b.tensor("ho", (128, total), "float32", "hbm", kind="output")
    st_ = b.tensor("st", (128, 128), "bfloat16", "sbuf", site=1)
    b.dma(acc(st_), acc(hs))
    for j in range(total // n_moving):
        cols = slice(j * n_moving, (j + 1) * n_moving)
        mv = b.tensor(f"mv{j}", (128, n_moving), "bfloat16", "sbuf", site=2)
        ps = b.tensor(f"ps{j}", (128, n_moving), "float32", "psum", site=3)
        o = b.tensor(f"o{j}", (128, n_moving), "float32", "sbuf", site=4)
        b.dma(acc(mv), acc(hm, ALL, cols))
        b.matmul(acc(ps), acc(st_), acc(mv))
        b.op("tensor_copy", "vector", out=acc(o), src=acc(ps))
        b.dma(acc(ho, ALL, cols), acc(o))
    return simulate_timing(b.program, TRN1).latency_ns


def test_moving_512_faster_than_128_for_the_same_flops():
    assert tiled_product(512) < tiled_product(128)
