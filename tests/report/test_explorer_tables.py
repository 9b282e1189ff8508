"""The simulated profile as Neuron Explorer's Parquet tables (neuroncore_sim.report.explorer),
read back and analysed the way hardware profiles are: the bound computations below are written
here from the formulas of performance-bounds.md (aws-neuron/neuron-agentic-development,
skills/neuron-nki-profile-querying), on the tables only, and must give our summary's bounds."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import neuroncore_sim as ncs
from programs import AS_WRITTEN
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim import cli
from neuroncore_sim.errors import UnsupportedError
from neuroncore_sim.report import explorer
from neuroncore_sim.sweep.kernel_file import example_inputs, find_kernel, load_kernel_file

pytest.importorskip("pyarrow", reason="pyarrow is in the test extra: pip install '.[test]'")

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
BOUNDS = ("memory_bound", "memory_bound_ideal", "memory_bound_ideal_no_reloads",
          "compute_bound", "compute_bound_ideal_flops", "compute_bound_ideal_useful_flops",
          "perfect_pipeline")


# --- the analysis of a hardware profile, from the reference's formulas --------------------------

def interval_merge_ns(starts, ends, t0, t1) -> float:
    """Wall-clock time covered by [start, end) intervals clipped to [t0, t1)."""
    starts, ends = np.maximum(np.asarray(starts, float), t0), np.minimum(np.asarray(ends, float), t1)
    keep = starts < ends
    total, cur_end = 0.0, 0.0
    for s, e in sorted(zip(starts[keep], ends[keep])):
        if s >= cur_end:
            total, cur_end = total + e - s, e
        elif e > cur_end:
            total, cur_end = total + e - cur_end, e
    return total


def bounds_from_tables(d: Path, window: tuple[float, float] | None = None) -> dict:
    """Every bound (seconds) and bn_speedup from the Parquet tables in ``d``, over ``window``
    (ns; default: the reference's, first DMA packet start to last end)."""
    meta = pd.read_parquet(d / "Metadata.parquet").iloc[0]
    summary = pd.read_parquet(d / "Summary.parquet").iloc[0]
    pkts = pd.read_parquet(d / "DmaPacket.parquet")
    agg = pd.read_parquet(d / "DmaPacketAggregated.parquet")
    active = pd.read_parquet(d / "ActiveTime.parquet")
    inst = pd.read_parquet(d / "Instruction.parquet")
    tensors = pd.read_parquet(d / "TensorInfo.parquet")
    peak_bw = meta["dma_ddr_bandwidth"]
    te_peak = (meta["tensor_engine_num_rows"] * meta["tensor_engine_num_cols"] * 2.0
               * meta["tensor_engine_clock_freq"] * 1e9)
    t0, t1 = window if window is not None else (agg["start_ts"].min(), agg["end_ts"].max())

    def engine_s(name: str) -> float:
        rows = active[active["engine"] == name]
        return interval_merge_ns(rows["start_ts"], rows["end_ts"], t0, t1) / 1e9

    memory_bound = interval_merge_ns(pkts["start_ts"], pkts["end_ts"], t0, t1) / 1e9
    kernel_pkts = pkts[(pkts["queue_type"] != "instruction") & (pkts["transfer_bytes"] > 4)]
    window = kernel_pkts[(kernel_pkts["start_ts"] >= t0) & (kernel_pkts["start_ts"] < t1)]
    matmuls = inst[(inst["engine"] == "Tensor") & (inst["opcode"] == "MATMUL")
                   & (inst["start_ts"] >= t0) & (inst["start_ts"] < t1)]
    hw = matmuls["adjusted_flops"].sum()
    transposes = matmuls[matmuls["tensor_instruction_type"] == "TRANSPOSE"]["adjusted_flops"].sum()
    engines = {"Tensor": engine_s("tensor"), "Vector": engine_s("vector"),
               "Scalar": engine_s("scalar"), "GpSimd": engine_s("gpsimd"), "DMA": memory_bound}
    b = {"memory_bound": memory_bound,
         "memory_bound_ideal": window["transfer_bytes"].sum() / peak_bw,
         "memory_bound_ideal_no_reloads":
             tensors[tensors["type"].isin(["IN", "OUT"])]["size"].sum() / peak_bw,
         "compute_bound": engines["Tensor"],
         "compute_bound_ideal_flops": hw / te_peak,
         "compute_bound_ideal_useful_flops": (hw - transposes) / te_peak,
         "perfect_pipeline": max(engines.values())}
    total = summary["total_time"]
    not_memory = max(v for k, v in engines.items() if k != "DMA")
    not_compute = max(v for k, v in engines.items() if k != "Tensor")
    b["bn_speedup"] = {name: total / max(v, not_memory if name.startswith("memory") else
                                         not_compute if name.startswith("compute") else 0.0)
                       for name, v in b.items()}
    b["bottleneck"] = max(engines, key=engines.get)
    return b


# --- kernels ---------------------------------------------------------------------------------------

def loads_twice(a):
    """Every block loaded twice: TensorInfo shows the repeat, the reload gap is visible."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])  # LOAD
        u = nl.load(a[i * 128:(i + 1) * 128, :])  # LOAD
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(nl.add(t, u)))
    return out


def matmul_and_transposes(lhsT, rhs):
    """Matmuls and TensorE transposes: hardware FLOPs differ from useful FLOPs."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s, m = nl.load(lhsT), nl.load(rhs)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for _ in nl.sequential_range(4):
        acc += nisa.nc_matmul(s, m)
    t = nisa.nc_transpose(nl.copy(nisa.nc_transpose(s)))
    nl.store(out, value=nl.add(nl.copy(acc, dtype=nl.float32),
                               nl.copy(t, dtype=nl.float32)[:, 0:1]))
    return out


def spills(a):
    """Five 48 KiB tiles live at once: SBUF spills, and the spill DMAs are packets too."""
    tiles = [nl.load(a[k * 128:(k + 1) * 128, :]) for k in range(5)]
    acc = nl.add(tiles[0], tiles[1])
    for k in range(2, 5):
        acc = nl.add(acc, tiles[k])
    out = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=acc)
    return out


def _sample(file: str, name: str | None = None):
    path = KERNELS / file
    module = load_kernel_file(path)
    _, kernel = find_kernel(module, name)
    pos, kw = example_inputs(module, path)
    return ncs.simulate(kernel, *pos, grid=getattr(module, "GRID", ()), functional=False, **kw)


LAUNCHES = {
    "matmul_blocked": lambda: _sample("matmul_blocked.py"),
    "layernorm_bn": lambda: _sample("layernorm.py", "layernorm_bn"),
    "transpose_tensor_engine": lambda: _sample("transpose2d.py", "transpose_tensor_engine"),
    "loads_twice": lambda: ncs.simulate(loads_twice, np.zeros((512, 1024), np.float32),
                                        functional=False, config=AS_WRITTEN),
    "matmul_and_transposes": lambda: ncs.simulate(
        matmul_and_transposes, np.zeros((128, 128), np.float32),
        np.zeros((128, 512), np.float32), functional=False, config=AS_WRITTEN),
    "tensor_add_grid": lambda: _sample("tensor_add.py"),  # an SPMD grid of 2 x 2
}
#: Launches with engine activity outside the reference's default window (before the first DMA
#: packet: the DMAs' fixed 1.3 us latency leaves time for memsets, iotas and transposes).
EARLY_WORK = {
    "layernorm_v1": lambda: _sample("layernorm_tutorial.py", "layernorm_v1"),
    "rmsnorm": lambda: _sample("rmsnorm.py"),
    "blocked_all": lambda: _sample("matmul_ladder.py", "blocked_all"),
}


def _check(got: dict, s: dict) -> None:
    for bound in BOUNDS:
        assert got[bound] * 1e9 == pytest.approx(s[bound], abs=0.01), bound
        assert got["bn_speedup"][bound] == pytest.approx(s["bn_speedup"][bound], abs=1e-3), bound
    assert got["bottleneck"].lower() == s["pipeline_bottleneck"]


@pytest.mark.parametrize("name", list(LAUNCHES))
def test_reference_bounds_on_the_tables_equal_our_summary(name: str, tmp_path: Path) -> None:
    """The reference's formulas with its own window (first to last DMA packet)."""
    res = LAUNCHES[name]()
    written = explorer.write_tables(res, tmp_path)
    assert [p.name for p in written] == [f"{t}.parquet" for t in explorer.TABLES]
    _check(bounds_from_tables(tmp_path), res.summary())


@pytest.mark.parametrize("name", list(LAUNCHES) + list(EARLY_WORK))
def test_over_the_whole_launch_they_equal_our_summary(name: str, tmp_path: Path) -> None:
    """The same formulas over the window [0, total_time], which holds every engine's work;
    the default window leaves out what engines do before the first DMA packet."""
    res = {**LAUNCHES, **EARLY_WORK}[name]()
    explorer.write_tables(res, tmp_path)
    s = res.summary()
    total_ns = pd.read_parquet(tmp_path / "Summary.parquet").iloc[0]["total_time"] * 1e9
    _check(bounds_from_tables(tmp_path, (0.0, total_ns)), s)
    if name in EARLY_WORK:
        first_dma = pd.read_parquet(tmp_path / "DmaPacket.parquet")["start_ts"].min()
        active = pd.read_parquet(tmp_path / "ActiveTime.parquet")
        assert (active["start_ts"] < first_dma).any()
        default = bounds_from_tables(tmp_path)  # that work is outside the default window
        assert any(abs(default[b] * 1e9 - s[b]) > 0.01 or abs(
            default["bn_speedup"][b] - s["bn_speedup"][b]) > 1e-3 for b in BOUNDS)


def test_whole_kernel_bounds_from_the_summary_table(tmp_path: Path) -> None:
    """The reference's whole-kernel inputs come from Summary alone."""
    res = EARLY_WORK["rmsnorm"]()
    explorer.write_tables(res, tmp_path)
    meta = pd.read_parquet(tmp_path / "Metadata.parquet").iloc[0]
    row = pd.read_parquet(tmp_path / "Summary.parquet").iloc[0]
    s = res.summary()
    peak_bw = meta["dma_ddr_bandwidth"]
    te_peak = (meta["tensor_engine_num_rows"] * meta["tensor_engine_num_cols"] * 2.0
               * meta["tensor_engine_clock_freq"] * 1e9)
    engines = [row[f"{e}_engine_active_time"] for e in ("tensor", "vector", "scalar", "gpsimd")]
    want = {"memory_bound": row["dma_active_time"],
            "memory_bound_ideal": row["dma_transfer_total_bytes"] / peak_bw,
            "memory_bound_ideal_no_reloads": row["inputs_outputs_weights_size_bytes"] / peak_bw,
            "compute_bound": row["tensor_engine_active_time"],
            "compute_bound_ideal_flops": row["hardware_flops"] / te_peak,
            "compute_bound_ideal_useful_flops":
                (row["hardware_flops"] - row["transpose_flops"]) / te_peak,
            "perfect_pipeline": max(*engines, row["dma_active_time"])}
    for bound, seconds in want.items():
        assert seconds * 1e9 == pytest.approx(s[bound], abs=0.01), bound
    assert row["total_time"] * 1e9 == pytest.approx(s["latency_ns"])


def test_spill_transfers_count_in_memory_bound_ideal(tmp_path: Path) -> None:
    """Spill saves and reloads are DMA packets (Neuron Explorer's dma_transfer_total_bytes),
    so memory_bound_ideal counts them, in the tables and in our summary alike."""
    a = np.zeros((5 * 128, 12288), np.float32)
    with pytest.warns(ncs.errors.SpillWarning):
        res = ncs.simulate(spills, a, functional=False, config=AS_WRITTEN)
    explorer.write_tables(res, tmp_path)
    s, got = res.summary(), bounds_from_tables(tmp_path)
    assert got["memory_bound_ideal"] * 1e9 == pytest.approx(s["memory_bound_ideal"], abs=0.01)
    spilled = s["memory"]["sbuf"]["spill_save_bytes"] + s["memory"]["sbuf"]["spill_reload_bytes"]
    assert spilled > 0
    assert s["dma_transfer_total_bytes"] == s["dma_bytes"] + spilled
    agg = pd.read_parquet(tmp_path / "DmaPacketAggregated.parquet")
    virtual = agg[agg["source"].str.contains("VIRTUAL", na=False)
                  | agg["dest"].str.contains("VIRTUAL", na=False)]
    assert virtual["transfer_bytes"].sum() == spilled


def test_reloads_and_transfer_attribution_read_like_hardware(tmp_path: Path) -> None:
    """The redundant-transfer and DMA-efficiency investigations' joins work: per tensor repeat
    factors, and Instruction -> Flow -> DmaPacketAggregated per source line."""
    a = np.zeros((512, 1024), np.float32)
    res = ncs.simulate(loads_twice, a, functional=False, config=AS_WRITTEN)
    explorer.write_tables(res, tmp_path)
    tensors = pd.read_parquet(tmp_path / "TensorInfo.parquet").set_index("variable_name")
    assert tensors.loc["a", "type"] == "IN" and tensors.loc["a", "size"] == a.nbytes
    assert tensors.loc["a", "load_to_sbuf_repeat_factor"] == 2.0
    assert tensors.loc["a", "load_to_sbuf_dma_count"] == 8
    agg = pd.read_parquet(tmp_path / "DmaPacketAggregated.parquet")
    by_var = agg.groupby("variable")["transfer_bytes"].sum()
    assert by_var["a"] == 2 * a.nbytes
    inst = pd.read_parquet(tmp_path / "Instruction.parquet")
    flow = pd.read_parquet(tmp_path / "Flow.parquet")
    loads = inst[(inst["hbm_read_bytes"] > 0) & inst["bir_debug_info_source_location"].notna()]
    joined = flow.merge(loads[["id", "bir_debug_info_source_location"]].rename(
        columns={"id": "in_id"}), on="in_id").merge(
        agg[["id", "transfer_bytes", "source", "write_num_sbuf_partitions"]].rename(
            columns={"id": "out_id"}), on="out_id")
    assert set(joined["source"]) == {"[[INPUT]]"}
    lines = joined.groupby(joined["bir_debug_info_source_location"].str.rsplit(
        "/", n=1).str[-1])["transfer_bytes"].sum()
    src = Path(__file__).read_text().splitlines()
    load_lines = [f"test_explorer_tables.py:{i}" for i, text in enumerate(src, 1)
                  if text.endswith("# LOAD")]
    assert sorted(lines.index) == sorted(load_lines) and set(lines) == {a.nbytes}
    assert set(joined["write_num_sbuf_partitions"]) == {128}
    pkts = pd.read_parquet(tmp_path / "DmaPacket.parquet")
    assert pkts["transfer_bytes"].sum() == agg["transfer_bytes"].sum() == res.summary()[
        "dma_transfer_total_bytes"]


def test_matmul_rows_pair_ldweights_and_matmul(tmp_path: Path) -> None:
    res = LAUNCHES["matmul_and_transposes"]()
    inst = explorer.tables(res)["Instruction"]
    tensor = inst[inst["engine"] == "Tensor"]
    regular = tensor[tensor["tensor_instruction_type"] == "REGULAR"]
    # The four matmuls share their stationary: one LoadStationary, sharing the first's bir_id.
    assert sorted(regular["opcode"].value_counts().items()) == [("LDWEIGHTS", 1), ("MATMUL", 4)]
    first = regular[regular["opcode"] == "MATMUL"].sort_values("start_ts")["bir_id"].iloc[0]
    assert regular[regular["opcode"] == "LDWEIGHTS"]["bir_id"].tolist() == [first]
    assert (regular[regular["opcode"] == "MATMUL"]["adjusted_flops"] == 2 * 128 * 128 * 512).all()
    transposes = tensor[tensor["tensor_instruction_type"] == "TRANSPOSE"]
    assert len(transposes) == 2 and (transposes["adjusted_flops"] == 2 * 128 * 128 * 128).all()


def test_summary_table_is_the_summary_in_explorer_units(tmp_path: Path) -> None:
    res = LAUNCHES["layernorm_bn"]()
    row = explorer.tables(res)["Summary"].iloc[0]
    s = res.summary()
    assert row["total_time"] == pytest.approx(s["latency_ns"] * 1e-9)
    assert row["vector_engine_active_time"] == pytest.approx(
        s["engine_active_ns"]["vector"] * 1e-9)
    assert row["dma_active_time_percent"] == pytest.approx(
        100 * s["engine_active_ns"]["dma"] / s["latency_ns"])
    assert row["hbm_read_bytes"] + row["hbm_write_bytes"] == s["hbm_bytes"]
    assert row["dma_transfer_count"] == s["dma_transfers"]
    assert row["mfu_estimated_percent"] == s["mfu_percent"]


def test_without_pyarrow_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    res = LAUNCHES["loads_twice"]()
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if not installed
    with pytest.raises(UnsupportedError, match=r"needs the optional pyarrow package; install "
                                               r"it with: pip install 'neuroncore_sim\[parquet\]'"):
        explorer.write_tables(res, tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_untimed_launch_is_refused() -> None:
    res = ncs.simulate(loads_twice, np.zeros((128, 64), np.float32), timing=False)
    with pytest.raises(UnsupportedError, match="expected a timing result"):
        explorer.tables(res)


def test_profile_out_writes_the_tables(tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    argv = ["profile", str(KERNELS / "matmul_blocked.py"), "--timing-only", "--no-progress",
            "--out", str(out)]
    assert cli.main(argv) == 0
    folder = out / "launch1_kernel" / cli.EXPLORER_FOLDER
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{t}.parquet" for t in explorer.TABLES)
    s = pd.read_parquet(folder / "Summary.parquet").iloc[0]
    assert s["total_time"] > 0
    # without pyarrow the other files are written and a note says why the tables are not
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    out2 = tmp_path / "out2"
    assert cli.main(argv[:-1] + [str(out2)]) == 0
    err = capsys.readouterr().err
    assert f"note: {out2}/launch1_kernel/parquet/ not written: writing the profile as Neuron " \
        "Explorer's Parquet tables needs the optional pyarrow package" in err
    assert (out2 / "launch1_kernel" / "summary.json").is_file()
