"""Parameter sweeps (neuroncore_sim.sweep.run): results, routing, errors, resume, parallel runs."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import ConfigError, UnsupportedError
from neuroncore_sim.sweep.kernel_file import UsageError
from neuroncore_sim.sweep.points_file import DamagedPointsWarning
from neuroncore_sim.sweep.run import POINTS_FILE, expand, sweep
from neuroncore_sim.sweep.point import SweepError, load_target
from neuroncore_sim.sweep.table import RESULT_COLUMNS

KERNELS = Path(__file__).resolve().parents[2] / "kernels"

# A small kernel file following the sweep convention: `cols` is a kernel keyword (the tile width),
# `rows`/`width` shape the inputs; `boom` makes a point raise, `die_marker` kills the process that
# runs the point once (the first time, when the marker file does not exist yet).
SCALE = '''
import os
import numpy as np
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl


@nki.jit
def kernel(x, cols=512, boom=False, die_marker=""):
    if boom:
        raise ValueError("boom requested")
    if die_marker and not os.path.exists(die_marker):
        open(die_marker, "w").close()
        os._exit(3)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[1] // cols):
        t = nl.load(x[:, i * cols:(i + 1) * cols])
        nl.store(out[:, i * cols:(i + 1) * cols], value=nl.multiply(t, SCALE))
    return out


SCALE = 2.0


def reference(x, cols=512):
    return x * 2.0


def example_inputs(rows=128, width=1024):
    return {"x": np.random.default_rng(0).standard_normal((rows, width)).astype(np.float32)}
'''


@pytest.fixture
def scale_file(tmp_path: Path) -> Path:
    path = tmp_path / "scale.py"
    path.write_text(textwrap.dedent(SCALE))
    return path


GRID = {"cols": [128, 256, 512], "width": [512, 1024]}


def _measured(row: pd.Series) -> dict:
    return {c: row[c] for c in RESULT_COLUMNS}


# --- results -------------------------------------------------------------------------------------

def test_rows_equal_single_runs(scale_file: Path) -> None:
    """Every row holds what simulating that point on its own gives."""
    table = sweep(str(scale_file), GRID, workers=1)
    module = load_target(str(scale_file)).module
    assert len(table) == 6 and table["error"].isna().all()
    for _, row in table.iterrows():
        inputs = module.example_inputs(width=row["width"])
        res = ncs.simulate(module.kernel, **inputs, cols=row["cols"], functional=False)
        s = res.summary()
        assert row["latency_ns"] == s["latency_ns"]
        assert row["latency_us"] == s["latency_ns"] / 1000
        for engine in ("tensor", "vector", "scalar", "gpsimd", "dma"):
            assert row[f"{engine}_busy_pct"] == s["busy_percent"][engine]
        assert row["dma_bytes"] == s["dma_bytes"]
        # against the peak of the kernel's DMA mix (its loads at the HBM read rate), as the
        # summary's bottleneck evidence quotes it, not the write-rate peak of all engines
        assert row["dma_pct_of_peak"] == s["dma_bandwidth_percent_of_peak"]
        assert row["dma_pct_of_peak"] > 100 * s["dma_bytes_per_ns"] / (
            res.config.dma_engines * res.config.dma_engine_bytes_per_ns)
        assert row["bottleneck"] == s["bottleneck"]
        assert row["instructions"] == sum(s["instructions"].values())
        assert pd.isna(row["match"]) and np.isnan(row["max_abs_err"])  # timing only


def test_table_is_sorted_and_marks_the_best(scale_file: Path) -> None:
    """Per problem (here per `width`, the example_inputs parameter), fastest first, its
    fastest point best (tests/sweep/test_sweep_ranking.py has more)."""
    table = sweep(str(scale_file), GRID, workers=1)
    assert table["width"].tolist() == [512] * 3 + [1024] * 3
    assert table["problem"].tolist() == [0] * 3 + [1] * 3
    for _, same in table.groupby("problem"):
        assert list(same["latency_ns"]) == sorted(same["latency_ns"])
    assert table["best"].tolist() == [True, False, False] * 2
    assert sorted(table["point"]) == list(range(6))
    # "point" is the index in the grid: the product with the last name varying fastest.
    grid = expand(GRID)
    for _, row in table.iterrows():
        assert grid[row["point"]] == {"cols": row["cols"], "width": row["width"]}


def test_matmul_blocked_sweep_matches_simulate() -> None:
    """A sample kernel: n_block (a kernel keyword) and N (an example_inputs parameter)."""
    target = f"{KERNELS / 'matmul_blocked.py'}::kernel"
    table = sweep(target, {"n_block": [1, 2], "N": [1024, 2048]}, workers=1)
    module = load_target(target).module
    for _, row in table.iterrows():
        res = ncs.simulate(module.kernel, **module.example_inputs(N=row["N"]),
                           n_block=row["n_block"], functional=False)
        assert row["latency_ns"] == res.latency_ns


def test_config_fields_are_sweep_parameters(scale_file: Path) -> None:
    table = sweep(str(scale_file), {"config.dma_hbm_write_bytes_per_ns": [8.5, 17.0]},
                  workers=1)
    module = load_target(str(scale_file)).module
    for _, row in table.iterrows():
        cfg = dataclasses.replace(ncs.TRN1, dma_hbm_write_bytes_per_ns=row[
            "config.dma_hbm_write_bytes_per_ns"])
        res = ncs.simulate(module.kernel, **module.example_inputs(), config=cfg,
                           functional=False)
        assert row["latency_ns"] == res.latency_ns
    slow, fast = table.sort_values("config.dma_hbm_write_bytes_per_ns")["latency_ns"]
    assert slow > fast


def test_check_compares_with_the_reference(scale_file: Path) -> None:
    table = sweep(str(scale_file), GRID, workers=1, check=True)
    assert table["match"].tolist() == [True] * 6
    assert (table["max_abs_err"] == 0.0).all()
    # Timing does not depend on whether values were computed.
    timing_only = sweep(str(scale_file), GRID, workers=1)
    assert table.set_index("point")["latency_ns"].equals(
        timing_only.set_index("point")["latency_ns"])


def test_check_threshold_checks_small_points_only(scale_file: Path) -> None:
    table = sweep(str(scale_file), {"width": [512, 1024]}, workers=1, check=128 * 512)
    by_width = table.set_index("width")
    assert by_width.loc[512, "match"] is True or by_width.loc[512, "match"] == True  # noqa: E712
    assert pd.isna(by_width.loc[1024, "match"])


@pytest.mark.filterwarnings("ignore::neuroncore_sim.errors.UnwrittenOutputWarning")  # (cols=768)
def test_a_wrong_result_is_not_the_best(tmp_path: Path, scale_file: Path) -> None:
    """A point that is fast but wrong (here cols=768 skips part of the output) is flagged and
    not marked best."""
    table = sweep(str(scale_file), {"cols": [256, 768], "width": [1024]}, workers=1, check=True)
    wrong = table[table["cols"] == 768].iloc[0]
    assert wrong["match"] == False  # noqa: E712 (pandas nullable boolean)
    assert table.loc[table["best"], "cols"].tolist() == [256]


# --- errors ----------------------------------------------------------------------------------------

def test_a_failing_point_is_recorded_and_the_sweep_goes_on(scale_file: Path) -> None:
    table = sweep(str(scale_file), {"boom": [False, True], "cols": [256, 512]}, workers=1)
    assert table["error"].notna().tolist() == [False, False, True, True]  # errors last
    error = table["error"].iloc[-1]
    assert error.startswith("ValueError: boom requested (scale.py:")
    line = int(error.rsplit(":", 1)[1].rstrip(")"))
    assert "boom requested" in scale_file.read_text().splitlines()[line - 1]
    assert table["best"].tolist() == [True, False, False, False]
    assert table["latency_ns"].iloc[2:].isna().all()


def test_kernel_errors_keep_their_kernel_location() -> None:
    target = f"{KERNELS / 'matmul_blocked.py'}::kernel"
    # (16 PSUM accumulators live at once no longer fail: the compiler spills PSUM to SBUF)
    table = sweep(target, {"dtype": ["int32"]}, workers=1)
    assert table["error"][0].startswith("DTypeError: matmul_blocked.py:")


def test_input_array_name_cannot_be_a_kernel_keyword(scale_file: Path) -> None:
    table = sweep(str(scale_file), {"x": [1]}, workers=1)
    assert "sweep parameter 'x'; expected a kernel keyword, found the name of an input" in (
        table["error"][0])


@pytest.mark.parametrize("target, message", [
    ("no_such_file.py", "kernel file not found"),
    (f"{KERNELS / 'matmul_blocked.py'}::nope", "has no kernel 'nope'"),
    (f"{KERNELS / 'layernorm.py'}", "name the kernel as FILE.py::KERNEL"),
])
def test_bad_target_fails_at_once(target: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        sweep(target, {"a": [1]}, workers=1)


def test_check_needs_a_reference(tmp_path: Path) -> None:
    path = tmp_path / "noref.py"
    path.write_text(textwrap.dedent(SCALE).replace("def reference(", "def _unused("))
    with pytest.raises(UsageError, match="check needs a reference"):
        sweep(str(path), {"cols": [128]}, workers=1, check=True)
    assert sweep(str(path), {"cols": [128]}, workers=1)["error"].isna().all()


def test_bad_config_executor_and_workers(scale_file: Path) -> None:
    with pytest.raises(ConfigError):
        sweep(str(scale_file), {"cols": [128]}, config="trn9")
    with pytest.raises(SweepError, match="executor; expected local or dask, found 'ray'"):
        sweep(str(scale_file), {"cols": [128]}, executor="ray")
    with pytest.raises(SweepError, match="workers; expected a positive number"):
        sweep(str(scale_file), {"cols": [128, 256]}, workers=0)


def test_expand() -> None:
    assert expand({"a": [1, 2], "b": ["x", "y"]}) == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    assert expand({"a": 3, "b": range(2)}) == [{"a": 3, "b": 0}, {"a": 3, "b": 1}]
    assert expand([{"a": np.int64(1)}, {"a": 2, "b": (1, 2)}]) == [{"a": 1},
                                                                    {"a": 2, "b": [1, 2]}]
    assert type(expand({"a": [np.int64(4)]})[0]["a"]) is int
    with pytest.raises(SweepError, match="sweep parameter 'a'; expected at least one value"):
        expand({"a": []})
    with pytest.raises(SweepError, match="expected a name that is not a column"):
        expand({"latency_ns": [1]})
    with pytest.raises(SweepError, match="sweep parameter value"):
        expand({"a": [object()]})
    with pytest.raises(SweepError, match="sweep point; expected a dict"):
        expand([1, 2])
    with pytest.raises(SweepError, match="at least one point"):
        expand([])


# --- files, resume, parallel ------------------------------------------------------------------------

def test_out_writes_points_table_and_plot(tmp_path: Path, scale_file: Path) -> None:
    out = tmp_path / "out"
    table = sweep(str(scale_file), GRID, workers=1, out=out)
    lines = (out / POINTS_FILE).read_text().splitlines()
    assert len(lines) == 6
    record = json.loads(lines[0])
    assert record["target"].startswith(f"{scale_file.name}::kernel@")
    assert record["config"] == "trn1"
    assert set(record["params"]) == {"cols", "width"} and record["wall_s"] > 0
    csv = pd.read_csv(out / "sweep.csv")
    assert list(csv.columns) == list(table.columns)
    assert np.allclose(csv["latency_ns"], table["latency_ns"])
    assert (out / "sweep.png").stat().st_size > 10_000


def test_resume_skips_saved_points(tmp_path: Path, scale_file: Path) -> None:
    """An interrupted sweep (a points file with two points and a half-written line) resumes:
    the saved points are taken from the file, only the others run, the table is complete."""
    full = sweep(str(scale_file), GRID, workers=1, out=tmp_path / "full")
    lines = (tmp_path / "full" / POINTS_FILE).read_text().splitlines()
    saved = [json.loads(line) for line in lines[:2]]
    saved[0]["latency_ns"] = 1.0  # a marker: this value can only come from the file
    part = tmp_path / "part"
    part.mkdir()
    (part / POINTS_FILE).write_text(
        "".join(json.dumps(r) + "\n" for r in saved) + lines[2][: len(lines[2]) // 2])
    with pytest.warns(DamagedPointsWarning, match="1 damaged line skipped"):  # the cut line
        resumed = sweep(str(scale_file), GRID, workers=1, out=part)
    assert resumed.loc[resumed["latency_ns"] == 1.0, "cols"].tolist() == [saved[0]["params"][
        "cols"]]
    after = (part / POINTS_FILE).read_text().splitlines()
    assert len(after) == 2 + 1 + 4  # kept, the cut line, the four points that ran
    keys = [json.loads(line)["key"] for line in after if line.endswith("}")]
    assert len(keys) == len(set(keys)) == 6
    # Apart from the marker, the resumed table is the uninterrupted one.
    fixed = resumed.set_index("point").sort_index()
    fixed.loc[expand(GRID).index(saved[0]["params"]), "latency_ns"] = json.loads(
        lines[0])["latency_ns"]
    want = full.set_index("point").sort_index()
    pd.testing.assert_frame_equal(fixed.drop(columns="best"), want.drop(columns="best"))
    # Running again does nothing new.
    with pytest.warns(DamagedPointsWarning):
        sweep(str(scale_file), GRID, workers=1, out=part)
    assert len((part / POINTS_FILE).read_text().splitlines()) == len(after)


def test_saved_points_follow_the_file_contents_not_its_path(tmp_path: Path,
                                                             scale_file: Path) -> None:
    """Points saved by a sweep of one checkout are reused from a copy of the kernel file in
    another folder (committed reports resume anywhere); an edited kernel runs again."""
    out = tmp_path / "out"
    sweep(str(scale_file), GRID, workers=1, out=out)
    copy = tmp_path / "elsewhere" / scale_file.name
    copy.parent.mkdir()
    copy.write_text(scale_file.read_text())
    sweep(str(copy), GRID, workers=1, out=out)
    assert len((out / POINTS_FILE).read_text().splitlines()) == 6
    copy.write_text(scale_file.read_text() + "\n# edited\n")
    sweep(str(copy), GRID, workers=1, out=out)
    assert len((out / POINTS_FILE).read_text().splitlines()) == 12


def test_points_of_another_model_version_run_again(tmp_path: Path, scale_file: Path,
                                                   monkeypatch) -> None:
    """A sweep resumed after the timing model changed (config.MODEL_VERSION) runs every point
    again instead of mixing the old model's estimates into its table."""
    from neuroncore_sim import config

    out = tmp_path / "out"
    sweep(str(scale_file), GRID, workers=1, out=out)
    sweep(str(scale_file), GRID, workers=1, out=out)
    assert len((out / POINTS_FILE).read_text().splitlines()) == 6
    monkeypatch.setattr(config, "MODEL_VERSION", config.MODEL_VERSION + ".next")
    sweep(str(scale_file), GRID, workers=1, out=out)
    assert len((out / POINTS_FILE).read_text().splitlines()) == 12


def test_parallel_and_serial_give_the_same_table(tmp_path: Path, scale_file: Path) -> None:
    serial = sweep(str(scale_file), GRID, workers=1)
    parallel = sweep(str(scale_file), GRID, workers=2, out=tmp_path / "p")
    pd.testing.assert_frame_equal(serial, parallel)
    assert len((tmp_path / "p" / POINTS_FILE).read_text().splitlines()) == 6


def test_killed_worker_loses_no_finished_point(tmp_path: Path, scale_file: Path) -> None:
    """A worker process dies (os._exit) in the middle of a parallel sweep: the sweep stops with
    a SweepError, the finished points are on disk, and a second run completes the table."""
    marker = tmp_path / "died_once"
    grid = [{"cols": c} for c in (128, 256)] + [{"cols": 512, "die_marker": str(marker)}] + [
        {"cols": c, "width": 2048} for c in (128, 256, 512)]
    out = tmp_path / "out"
    with pytest.raises(SweepError, match="did not finish: a worker process died"):
        sweep(str(scale_file), grid, workers=2, out=out)
    assert marker.exists()
    saved = (out / POINTS_FILE).read_text().splitlines()
    assert len(saved) < len(grid)
    resumed = sweep(str(scale_file), grid, workers=2, out=out)
    assert len((out / POINTS_FILE).read_text().splitlines()) == len(grid)
    pd.testing.assert_frame_equal(resumed, sweep(str(scale_file), grid, workers=1))


def test_an_edited_kernel_file_is_reloaded(scale_file: Path) -> None:
    before = sweep(str(scale_file), {"cols": [512]}, workers=1, check=True)
    assert before["match"][0] == True  # noqa: E712
    scale_file.write_text(scale_file.read_text().replace("SCALE = 2.0", "SCALE = 3.0  # edited"))
    after = sweep(str(scale_file), {"cols": [512]}, workers=1, check=True)
    assert after["match"][0] == False  # noqa: E712


# --- Dask ------------------------------------------------------------------------------------------

def test_dask_executor_needs_a_scheduler(scale_file: Path) -> None:
    pytest.importorskip("distributed", reason="dask.distributed is not installed "
                                               "(pip install 'neuroncore_sim[dask]')")
    with pytest.raises(SweepError, match="expected scheduler=ADDRESS"):
        sweep(str(scale_file), {"cols": [128]}, executor="dask")


def test_dask_missing_is_a_clear_error(scale_file: Path, monkeypatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)
    with pytest.raises(UnsupportedError, match=r"pip install 'neuroncore_sim\[dask\]'"):
        sweep(str(scale_file), {"cols": [128]}, executor="dask", scheduler="tcp://x:1")


def test_dask_sweep_equals_local(tmp_path: Path, scale_file: Path) -> None:
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install "
                              "'neuroncore_sim[dask]'): the Dask executor is not tested")
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        on_dask = sweep(str(scale_file), GRID, executor="dask",
                        scheduler=cluster.scheduler_address, out=tmp_path / "d")
    pd.testing.assert_frame_equal(on_dask, sweep(str(scale_file), GRID, workers=1))
    assert len((tmp_path / "d" / POINTS_FILE).read_text().splitlines()) == 6


# --- command line ----------------------------------------------------------------------------------

def test_cli_sweep_prints_the_ranked_table(tmp_path: Path, scale_file: Path, capsys) -> None:
    from neuroncore_sim import cli

    out = tmp_path / "out"
    argv = ["sweep", str(scale_file), "--param", "cols=128,256,512", "--param", "width=1024",
            "--workers", "1", "--check", "--out", str(out)]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["point", "cols", "width"]
    assert lines[1].startswith("*") and len([ln for ln in lines if ln.startswith("*")]) == 1
    assert "match" in lines[0] and "True" in lines[1]
    assert f"wrote {out}/points.jsonl, sweep.csv and sweep.png" in text
    assert {p.name for p in out.iterdir()} == {"points.jsonl", "sweep.csv", "sweep.png", "best"}


def test_cli_sweep_exit_status(tmp_path: Path, scale_file: Path, capsys) -> None:
    from neuroncore_sim import cli

    base = ["sweep", str(scale_file), "--workers", "1"]
    assert cli.main(base + ["--param", "boom=0,1"]) == 0  # one point failed, one ran
    assert "1 of 2 point(s) failed; point 1: ValueError: boom requested" in (
        capsys.readouterr().out)
    assert cli.main(base + ["--param", "boom=1"]) == 1  # every point failed
    assert capsys.readouterr().out.endswith("ValueError: boom requested (scale.py:11)\n")
    for bad in (["--param", "cols"], ["--param", "=1"], [],
                ["--param", "cols=1", "--param", "cols=2"],
                ["--param", "cols=128", "--check", "--check-max-elements", "10"],
                ["--param", "colz=1"], ["--param", "config.dma_engines=0"]):
        assert cli.main(base + bad) == 2, bad
        assert capsys.readouterr().err.startswith("neuroncore-sim: error: ")
    assert cli.main(["sweep", "missing.py", "--param", "a=1"]) == 2


def test_cli_param_values_are_parsed() -> None:
    from neuroncore_sim.sweep.cli import parse_params

    assert parse_params(["n=1,2", "x=0.5,1e3", "dtype=bfloat16,float32", "config.dma_engines=8"]
                        ) == {"n": [1, 2], "x": [0.5, 1000.0], "dtype": ["bfloat16", "float32"],
                              "config.dma_engines": [8]}


@pytest.mark.parametrize("spec", ["n=1,,2", "n=1,", "n=,1"])
def test_cli_param_with_an_empty_value_is_a_usage_error(spec) -> None:
    from neuroncore_sim.sweep.cli import parse_params
    from neuroncore_sim.sweep.kernel_file import UsageError

    with pytest.raises(UsageError, match=r"--param n: expected values separated by single "
                                         r"commas, found an empty value"):
        parse_params([spec])


def test_cli_ctrl_c_says_how_to_resume(tmp_path: Path, scale_file: Path, monkeypatch,
                                       capsys) -> None:
    from neuroncore_sim import cli
    from neuroncore_sim.sweep import cli as sweep_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_cli, "sweep", interrupted)
    out = tmp_path / "o"
    assert cli.main(["sweep", str(scale_file), "--param", "cols=128", "--out", str(out)]) == 130
    assert capsys.readouterr().err == (f"neuroncore-sim: sweep interrupted; finished points are "
                                       f"saved in {out}/points.jsonl: run the same command again "
                                       "to resume\n")
