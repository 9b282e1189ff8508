"""Roofline, MFU, bandwidth, bottleneck verdict with evidence, stalls and memory peaks
(neuroncore_sim.timing.analysis, neuroncore_sim.timing.memory_use, SimResult.summary()).

The kernels below are built to be bound by one thing each; the numbers in the comments are
worked out by hand from shared/arch.md and config.TRN1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.report import tables as report

from programs import AS_WRITTEN

HERE = Path(__file__).name
BF16 = ml_dtypes.bfloat16


def line_of(marker: str) -> str:
    """ "test_analysis.py:LINE" of the line in this file ending with ``# <marker>``."""
    for n, text in enumerate(Path(__file__).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}"):
            return f"{HERE}:{n}"
    raise AssertionError(marker)


# --- the kernels ----------------------------------------------------------------------------------

@nki.jit
def one_matmul(lhsT, rhs):
    """out[128, 512] (fp32) = lhsT[128, 128].T @ rhs[128, 512], bf16 inputs: one nc_matmul."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    st = nl.load(lhsT)  # LOAD_ST
    mv = nl.load(rhs)  # LOAD_MV
    ps = nisa.nc_matmul(st, mv)  # MATMUL
    res = nl.copy(ps)  # COPY
    nl.store(out, value=res)  # STORE
    return out


@nki.jit
def copy_rows(a):
    """DMA-bound: 8 tiles of [128, 1024] fp32 loaded and stored back, no compute."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


@nki.jit
def repeated_matmul(lhsT, rhs):
    """TensorE-bound: the same bf16 [128,128] x [128,512] matmul accumulated 64 times."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    st = nl.load(lhsT)
    mv = nl.load(rhs)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for _ in nl.affine_range(64):
        acc += nisa.nc_matmul(st, mv)
    nl.store(out, value=nl.copy(acc))
    return out


@nki.jit
def repeated_add(a):
    """VectorE-bound: 20 dependent fp32 adds on one [128, 512] tile."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    for _ in range(20):
        t = nl.add(t, t)
    nl.store(out, value=t)
    return out


@nki.jit
def tiny_chain(a):
    """Latency-bound: load 16 bytes per partition, one add, store: fixed DMA latency dominates."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)  # TINY_LOAD
    nl.store(out, value=nl.add(t, 1.0))
    return out


def _bf16(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(BF16)


@pytest.fixture(scope="module")
def matmul_result():
    return ncs.simulate(one_matmul, _bf16((128, 128)), _bf16((128, 512), 1), config=AS_WRITTEN)


def test_one_matmul_values(matmul_result):
    lhsT, rhs = _bf16((128, 128)), _bf16((128, 512), 1)
    ref = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    np.testing.assert_allclose(matmul_result.outputs[0], ref, rtol=1e-5, atol=1e-4)


# --- hand-checked summary of one matmul -----------------------------------------------------------
# Timeline (TRN1): both loads are issued at 0 and start after dma_fixed_latency_ns = 1300.
#   lhsT [128,128] bf16: 16 transfers of 8 partitions x 256 B; a buffer read from HBM costs
#     max(dma_buffer_overhead_ns 7, 256 / dma_hbm_read_bytes_per_ns 17.0) -> LS_T per engine.
#   rhs [128,512] bf16: 1024 B buffers: MV_T, after lhsT's transfers on every engine.
#   MultiplyMoving waits for rhs + semaphore 30 (MM_START), runs 512 TensorE cycles at the
#     sustained rate (tensor_sustained_fraction 0.8524 of 2.8 GHz): MM_BUSY.
#   The PSUM->SBUF copy (VectorE) waits for the TensorE pipeline 147 + 30 (COPY_START), runs
#     512 cycles / 1.12 GHz = 457.143.
#   The store waits 60 VectorE cycles (53.571) + 30, then 1300; 2048 B buffers written to HBM
#     at dma_hbm_write_bytes_per_ns 17.0: ST_T.
RD, WR, OVH = 17.0, 17.0, 7.0
LS_T = 8 * max(OVH, 256 / RD)  # 120.47
MV_T = 8 * max(OVH, 1024 / RD)  # 481.88
ST_T = 8 * max(OVH, 2048 / WR)  # 963.76
MM_START = 1300 + LS_T + MV_T + 30
MM_BUSY = 512 / (2.8 * 0.8524)  # 214.52
COPY_START = MM_START + MM_BUSY + 147 + 30
LATENCY = COPY_START + 512 / 1.12 + 60 / 1.12 + 30 + 1300 + ST_T
MM_NS = 512 / 2.8  # 128*128*512 MACs at 128*128 MACs per cycle at 2.8 GHz = 182.857 ns
DMA_BYTES = 128 * 128 * 2 + 128 * 512 * 2 + 128 * 512 * 4  # 425,984: every byte crosses HBM once
READ_BYTES = 128 * 128 * 2 + 128 * 512 * 2  # the two loads read HBM: 163,840
# The DMA engines move the loads at dma_hbm_read_bytes_per_ns (17.0), the store at
# dma_hbm_write_bytes_per_ns (17.0), over 16
DMA_NS = (READ_BYTES / RD + (DMA_BYTES - READ_BYTES) / WR) / 16


def test_one_matmul_latency_by_hand(matmul_result):
    assert matmul_result.latency_ns == pytest.approx(LATENCY)


def test_one_matmul_roofline_and_mfu(matmul_result):
    s = matmul_result.summary()
    # Useful FLOPs: 2 * K * M * N = 2 * 128 * 128 * 512.
    assert s["matmul_flops"] == 16_777_216
    terms = s["roofline_terms_ns"]
    assert terms["tensor_flops"] == pytest.approx(MM_NS)  # 182.857
    assert terms["dma_bandwidth"] == pytest.approx(DMA_NS)  # 2376.46
    assert terms["hbm_bandwidth"] == pytest.approx(DMA_BYTES / 410.0)  # 1038.99
    assert terms["tensor_work"] == pytest.approx(MM_BUSY)  # the sustained rate
    assert terms["vector_work"] == pytest.approx(512 / 1.12)  # the copy: 457.14
    assert terms["scalar_work"] == terms["gpsimd_work"] == 0.0
    assert s["roofline_limit"] == "dma_bandwidth"
    assert s["roofline_ns"] == pytest.approx(DMA_NS)
    assert s["latency_over_roofline"] == pytest.approx(LATENCY / DMA_NS, rel=1e-5)  # 2.489
    assert s["roofline_percent"] == pytest.approx(100 * DMA_NS / LATENCY, rel=1e-5)  # 40.2
    # MFU: 182.857 ns of peak TensorE work in 5915.0 ns = 3.09 %.
    assert s["mfu_percent"] == pytest.approx(100 * MM_NS / LATENCY, rel=1e-4)
    assert s["achieved_tflops"] == pytest.approx(16_777_216 / LATENCY / 1000)  # 2.4548


def test_one_matmul_queue_busy_is_not_bandwidth(matmul_result):
    s = matmul_result.summary()
    # Three DMAs, each 16 transfers, averaged over 16 engines: LS_T + MV_T + ST_T ns...
    assert s["dma_queue_busy_percent"] == pytest.approx(100 * (LS_T + MV_T + ST_T) / LATENCY)
    assert s["dma_queue_busy_percent"] == s["busy_percent"]["dma"]
    # ... while the bytes moved are 425,984 B over the latency, against the peak of this mix
    # (two loads at the HBM read rate, one store at the write rate): DMA_BYTES / DMA_NS =
    # 179.3 B/ns, not the write peak 289.6 B/ns the summary quoted for every kernel before.
    peak = DMA_BYTES / DMA_NS
    assert s["dma_peak_bytes_per_ns"] == pytest.approx(peak)
    assert s["dma_bandwidth_percent_of_peak"] == pytest.approx(
        100 * DMA_BYTES / LATENCY / peak, rel=1e-4)
    assert s["dma_bandwidth_percent_of_peak"] == pytest.approx(s["roofline_percent"], rel=1e-4)
    assert s["hbm_bytes"] == DMA_BYTES
    assert s["hbm_peak_bytes_per_ns"] == 410.0
    assert s["hbm_bandwidth_percent_of_peak"] == pytest.approx(
        100 * DMA_BYTES / LATENCY / 410.0, rel=1e-4)
    t = report.dma_table(matmul_result)
    assert t.loc["total", "queue_busy_percent"] == pytest.approx(s["dma_queue_busy_percent"])
    assert t.loc["total", "bandwidth_percent_of_peak"] == pytest.approx(
        s["dma_bandwidth_percent_of_peak"])
    assert t.loc["dma0", "queue_busy_percent"] == pytest.approx(
        100 * (LS_T + MV_T + ST_T) / LATENCY)


def test_one_matmul_stalls(matmul_result):
    s = matmul_result.summary()
    # VectorE idles from 0 until the matmul result is visible (COPY_START); TensorE's
    # MultiplyMoving idles from 0 until the rhs load is visible (MM_START).
    assert s["top_stalls"] == [
        {"engine": "vector", "waited_on": "tensor",
         "producer": f"nc_matmul at {line_of('MATMUL')}",
         "stall_ns": pytest.approx(COPY_START), "count": 1},
        {"engine": "tensor", "waited_on": "dma", "producer": f"dma_copy at {line_of('LOAD_MV')}",
         "stall_ns": pytest.approx(MM_START), "count": 1},
    ]
    t = report.stall_table(matmul_result)
    assert list(t["engine"]) == ["vector", "tensor"]
    assert t["percent"].iloc[1] == pytest.approx(100 * MM_START / LATENCY)
    text = report.summary_text(matmul_result)
    assert (f"stalls     : vector waited {COPY_START / 1000:.2f} us on tensor (nc_matmul at {line_of('MATMUL')}), 1x"
            in text)


def test_one_matmul_memory(matmul_result):
    m = matmul_result.summary()["memory"]
    # SBUF: lhsT tile 256 B + rhs tile 1024 B per partition (live 1300..MM_START + MM_BUSY), then the
    # copy's fp32 [128, 512] tile: 2048 B from COPY_START (after both loads are dead).
    assert m["sbuf"] == {"peak_bytes_per_partition": 2048,
                         "capacity_bytes_per_partition": 192 * 1024 - 16 * 1024,
                         "peak_percent": pytest.approx(100 * 2048 / 180224),
                         "peak_at_ns": pytest.approx(COPY_START, abs=1e-3), "tiles": 3,
                         "peak_sites": {line_of("COPY"): 2048},
                         "spill_save_bytes": 0, "spill_reload_bytes": 0, "spill_sites": {}}
    # PSUM: one fp32 [128, 512] tile = 2048 B = one bank, from the MultiplyMoving that writes
    # it (the LoadStationary before it reads only the stationary tile).
    assert m["psum"]["peak_bytes_per_partition"] == 2048
    assert m["psum"]["peak_at_ns"] == pytest.approx(MM_START)
    assert m["psum"]["peak_percent"] == pytest.approx(12.5)
    t = report.memory_table(matmul_result)
    assert list(t.index) == [line_of("COPY"), line_of("LOAD_MV"), line_of("LOAD_ST"),
                             line_of("MATMUL")]
    assert list(t["space"]) == ["sbuf", "sbuf", "sbuf", "psum"]
    assert list(t["tile_bytes"]) == [2048, 1024, 256, 2048]
    assert t.loc[line_of("LOAD_MV"), "first_ns"] == pytest.approx(1300 + LS_T)
    assert t.loc[line_of("LOAD_MV"), "last_ns"] == pytest.approx(MM_START + MM_BUSY)
    series = report.memory_series(matmul_result)
    at = series.set_index("time_ns")
    assert at.loc[1300.0, "sbuf_bytes"] == 256
    assert at.loc[1300 + LS_T, "sbuf_bytes"] == 1280
    assert series["sbuf_bytes"].max() == 2048 and series["psum_bytes"].max() == 2048
    assert series["sbuf_bytes"].iloc[-1] == 0 and series["psum_bytes"].iloc[-1] == 0


def test_summary_text_names_the_new_numbers(matmul_result):
    text = report.summary_text(matmul_result)
    assert (f"roofline   : {DMA_NS:,.0f} ns (dma_bandwidth); the estimate is {LATENCY / DMA_NS:.2f}x "
            "the bound") in text
    assert f"MFU {100 * MM_NS / LATENCY:.1f}%" in text
    assert (f"bandwidth {100 * DMA_NS / LATENCY:.0f}% of peak {DMA_BYTES / DMA_NS:.1f} B/ns "
            "(dma_engines 16, HBM reads at dma_hbm_read_bytes_per_ns 17, writes at "
            "dma_hbm_write_bytes_per_ns 17, on-chip copies at dma_engine_bytes_per_ns 18.1)"
            ) in text
    busy = f"{100 * (LS_T + MV_T + ST_T) / LATENCY:.1f}%"
    assert f"queues busy {busy}" in text and f"dma queues {busy}" in text
    assert f"{100 * DMA_BYTES / LATENCY / 410:.0f}% of peak 410 B/ns (hbm_bytes_per_ns)" in text
    assert f"SBUF peak 2,048 of 180,224 B/partition (1.1%) at {COPY_START / 1000:.2f} us ({line_of('COPY')} 2,048)" \
        in text


# --- bottleneck verdicts ---------------------------------------------------------------------------

def _summary(kernel, *args):
    return ncs.simulate(kernel, *args, config=AS_WRITTEN).summary()


def test_dma_bound_verdict():
    s = _summary(copy_rows, np.ones((1024, 1024), np.float32))
    ev = s["bottleneck_evidence"]
    assert s["bottleneck"] == "dma" and ev["busiest"] == "dma"
    assert ev["busiest_percent"] == s["dma_queue_busy_percent"] > 90
    assert ev["threshold_percent"] == 50.0
    # 8 loads + 8 stores of 512 KiB: 4 MiB read at 16 x 17.0 B/ns and 4 MiB written at
    # 16 x 17.0 B/ns = 30,840 ns is the bound.
    assert s["dma_bytes"] == 16 * 128 * 1024 * 4
    assert s["roofline_limit"] == "dma_bandwidth"
    assert s["roofline_ns"] == pytest.approx((4 * 2**20 / 17.0 + 4 * 2**20 / 17.0) / 16)
    assert s["mfu_percent"] == 0.0 and s["matmul_flops"] == 0
    pct = f"{s['dma_bandwidth_percent_of_peak']:.0f}"
    assert ev["reason"] == (f"dma queues busy {ev['busiest_percent']:.1f}% of the latency > 50%;"
                            f" next busiest tensor 0.0%; DMA bandwidth {pct}% of peak")


def test_tensor_bound_verdict():
    s = _summary(repeated_matmul, _bf16((128, 128)), _bf16((128, 512), 1))
    ev = s["bottleneck_evidence"]
    assert s["bottleneck"] == "tensor" and ev["busiest_percent"] > 50
    # 64 matmuls of 512 cycles: at peak 11,702.9 ns, busy at the sustained rate 13,729.3 ns
    # (TensorE's work is the limit), so MFU is 0.8524 of TensorE's busy share.
    assert s["busy_ns"]["tensor"] == pytest.approx(64 * MM_BUSY)
    assert s["roofline_terms_ns"]["tensor_flops"] == pytest.approx(64 * MM_NS)
    assert s["roofline_limit"] == "tensor_work"
    assert s["mfu_percent"] == pytest.approx(0.8524 * s["busy_percent"]["tensor"])
    assert s["matmul_flops"] == 64 * 2 * 128 * 128 * 512
    assert ev["runner_up"] == "dma"
    assert ev["reason"].startswith(f"tensor busy {ev['busiest_percent']:.1f}% of the latency")


def test_vector_bound_verdict():
    s = _summary(repeated_add, np.ones((128, 512), np.float32))
    ev = s["bottleneck_evidence"]
    assert s["bottleneck"] == "vector" and ev["busiest"] == "vector"
    # 20 fp32 tensor_tensor of 2 * 512 cycles at 1.12 GHz; the 19 that read the previous
    # result pay vector_dependent_overhead_cycles (100) each.
    vec = (20 * 1024 + 19 * 100) / 1.12
    assert s["busy_ns"]["vector"] == pytest.approx(vec)
    assert s["roofline_limit"] == "vector_work" and s["roofline_ns"] == pytest.approx(vec)
    assert ev["busy_percent"]["vector"] == pytest.approx(100 * vec / s["latency_ns"])
    assert list(ev["busy_percent"])[0] == "vector"  # ranked, busiest first


def test_latency_bound_verdict():
    s = _summary(tiny_chain, np.ones((128, 4), np.float32))
    ev = s["bottleneck_evidence"]
    assert s["bottleneck"] == "latency"
    assert all(v <= 50 for v in ev["busy_percent"].values())
    # The add waits for the load: dma_fixed_latency_ns 1300 + 8 buffers x 7 (16 B rows: the
    # descriptor floor) + semaphore 30.
    top = s["top_stalls"][0]
    assert top == {"engine": "vector", "waited_on": "dma",
                   "producer": f"dma_copy at {line_of('TINY_LOAD')}",
                   "stall_ns": pytest.approx(1300 + 8 * 7 + 30), "count": 1}
    assert ev["reason"].endswith(f"largest stall: vector waited 1.39 us on dma (dma_copy at "
                                 f"{line_of('TINY_LOAD')}), 1x")
    assert s["latency_over_roofline"] > 10  # tiny work, long fixed latencies


# --- stalls: ports and SPMD instances ---------------------------------------------------------------

def test_port_stall_is_named_by_port():
    from programs import Builder, acc

    from neuroncore_sim.config import TRN1
    from neuroncore_sim.result import SimResult
    from neuroncore_sim.timing.engines import simulate_timing

    b = Builder()
    x, y, z, w = (b.tensor(f"t{i}", (128, 512), "float32", "sbuf", site=i + 1) for i in range(4))
    b.op("tensor_copy", "vector", out=acc(y), src=acc(x))
    b.op("tensor_copy", "gpsimd", out=acc(w), src=acc(z))
    res = SimResult(b.program, (), TRN1, simulate_timing(b.program, TRN1))
    # GpSimd waits for VectorE to release the SBUF port: 512 VectorE cycles at 1.12 GHz.
    assert res.summary()["top_stalls"] == [
        {"engine": "gpsimd", "waited_on": "port:sbuf", "producer": "",
         "stall_ns": pytest.approx(512 / 1.12), "count": 1}]


def test_stalls_count_from_each_instance_start():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels"))
    import tensor_add

    a = np.ones((256, 512), np.float32)
    res = ncs.simulate(tensor_add.kernel, a, a, grid=(2, 1))
    ev = res.events
    vec = ev[ev.engine == "vector"].reset_index()
    assert len(vec) == 2
    inst1_start = ev[ev.instance == 0].end_ns.max()  # instance 1 starts when 0 has ended
    stalls = res.summary()["top_stalls"]
    assert [(s["engine"], s["waited_on"], s["count"]) for s in stalls] == [("vector", "dma", 2)]
    assert stalls[0]["stall_ns"] == pytest.approx(vec.start_ns[0] + vec.start_ns[1] - inst1_start)


def _load_kernel():
    def loads(a):
        out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, value=t[:, 0:1])  # a token store: the bytes are the load's
        return out
    return loads


def test_dma_peak_is_the_read_peak_for_a_kernel_that_only_loads() -> None:
    """A load-bound kernel is compared with the HBM read peak (16 x 17.0 B/ns), not the write
    peak (34 B/ns here, to tell them apart): almost every byte it moves is read from HBM."""
    a = np.zeros((128, 2048), np.float32)
    fast_writes = override(TRN1, {"dma_hbm_write_bytes_per_ns": 34.0}, "test")
    res = ncs.simulate(_load_kernel(), a, functional=False, config=fast_writes)
    s = res.summary()
    read, other = 128 * 2048 * 4, 128 * 4
    peak = (read + other) / ((read / 17.0 + other / 34.0) / 16)
    assert s["dma_peak_bytes_per_ns"] == pytest.approx(peak)
    assert 271.9 < s["dma_peak_bytes_per_ns"] < 272.3  # ~16 x 17.0, not 544
    assert s["dma_bandwidth_percent_of_peak"] <= 100.0
    t = report.dma_table(res)
    assert t.loc["total", "peak_bytes_per_ns"] == pytest.approx(peak)
    assert t.loc["dma0", "peak_bytes_per_ns"] == pytest.approx(peak / 16)
