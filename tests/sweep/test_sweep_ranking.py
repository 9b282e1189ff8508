"""Ranking a sweep (neuroncore_sim.sweep.table.rank): the best point per problem (points with the
same example_inputs parameters), and flagged points (no instruction recorded, an output left
unwritten) that are kept but never ranked best; in the table, the command line and the plot."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from neuroncore_sim import cli
from neuroncore_sim.errors import InputWriteWarning
from neuroncore_sim.sweep.plot import bar_colours, problem_lines, save_sweep_plot
from neuroncore_sim.sweep.run import sweep
from neuroncore_sim.sweep.table import RESULT_COLUMNS, rank

KERNELS = Path(__file__).resolve().parents[2] / "kernels"

# `tile` wider than the input: the loop runs zero times (nothing recorded, out never written);
# `half`: only the first half of the column tiles is stored; `poke`: writes its input.
PARTIAL = '''
import numpy as np
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl


@nki.jit
def kernel(x, tile=128, half=False, poke=False):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n = x.shape[1] // tile
    for i in nl.affine_range(n // 2 if half else n):
        t = nl.load(x[:, i * tile:(i + 1) * tile])
        nl.store(out[:, i * tile:(i + 1) * tile], value=nl.multiply(t, 2.0))
        if poke:
            nl.store(x[:, i * tile:(i + 1) * tile], value=t)
    return out


def reference(x, tile=128, half=False, poke=False):
    return x * 2.0


def example_inputs(rows=128, width=512):
    return {"x": np.linspace(-1, 1, rows * width, dtype=np.float32).reshape(rows, width)}
'''


@pytest.fixture
def partial(tmp_path: Path) -> Path:
    path = tmp_path / "partial.py"
    path.write_text(textwrap.dedent(PARTIAL))
    return path


# --- flagged points --------------------------------------------------------------------------------

def test_matmul_blocked_that_loops_zero_times_is_flagged_not_best() -> None:
    """The issue's case: n_block=8 at N=2048 has 2048 // (512 * 8) = 0 column blocks, so the
    kernel records nothing and 'takes' 0 us; it must not top the sweep."""
    table = sweep(f"{KERNELS / 'matmul_blocked.py'}::kernel",
                  {"n_block": [1, 2, 8], "N": [2048]}, workers=1)
    zero = table[table["n_block"] == 8].iloc[0]
    assert zero["latency_ns"] == 0.0 and zero["instructions"] == 0
    assert zero["flag"].startswith("no instruction recorded (the kernel did no work); "
                                   "matmul_blocked.py:16: kernel return value")
    assert "(allocated at matmul_blocked.py:20) is never written" in zero["flag"]
    assert pd.isna(zero["error"]) and not zero["best"]
    assert table["n_block"].tolist()[-1] == 8  # after the measured points
    best = table[table["best"]]
    assert len(best) == 1 and best["n_block"].iloc[0] in (1, 2) and best["latency_ns"].iloc[0] > 0
    assert table["flag"].isna().sum() == 2


def test_an_output_written_in_part_is_flagged_in_checked_runs(partial: Path) -> None:
    table = sweep(str(partial), {"half": [False, True]}, workers=1, check=True)
    half = table[table["half"]].iloc[0]
    assert half["flag"] == ("partial.py:7: kernel return value hbm0 (allocated at partial.py:9) "
                            "is written only in part: 32768 of its 65536 elements never written")
    assert half["instructions"] > 0 and not half["best"]
    assert half["match"] == False  # noqa: E712 (the NaN half differs from the reference)
    whole = table[~table["half"]].iloc[0]
    assert whole["best"] and pd.isna(whole["flag"]) and whole["match"] == True  # noqa: E712


def test_a_fast_flagged_point_loses_best_to_a_slower_good_one(partial: Path) -> None:
    """Timing only: the half-written output is not visible, the never-written one is; the
    flagged point is faster but the slower good one is best."""
    table = sweep(str(partial), {"tile": [128, 1024]}, workers=1)
    flagged = table[table["tile"] == 1024].iloc[0]
    good = table[table["tile"] == 128].iloc[0]
    assert flagged["latency_ns"] < good["latency_ns"]
    assert flagged["flag"].startswith("no instruction recorded")
    assert good["best"] and not flagged["best"]
    assert table["tile"].tolist() == [128, 1024]


def test_other_warnings_of_a_point_are_still_shown(partial: Path) -> None:
    with pytest.warns(InputWriteWarning, match="partial.py:15: kernel writes its input tensor"):
        table = sweep(str(partial), {"poke": [True]}, workers=1)
    assert pd.isna(table["flag"].iloc[0]) and bool(table["best"].iloc[0])


# --- best per problem ------------------------------------------------------------------------------

def test_best_is_per_problem(partial: Path) -> None:
    """`width` and `rows` (example_inputs parameters) set the problem; `tile` (a kernel keyword)
    is what is compared. Every problem gets its own best, and problems keep grid order."""
    table = sweep(str(partial), {"rows": [64, 128], "width": [1024, 512], "tile": [128, 256]},
                  workers=1)
    order = [(64, 1024), (64, 512), (128, 1024), (128, 512)]
    assert [order[p] for p in table["problem"]] == list(zip(table["rows"], table["width"]))
    assert table["problem"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    for _, same in table.groupby("problem"):
        assert same["best"].tolist() == [True, False]
        assert same["latency_ns"].iloc[0] <= same["latency_ns"].iloc[1]
    # Ranked globally, one point would be best; here the best of the slowest problem is too.
    slowest = table.groupby("problem")["latency_ns"].min().idxmax()
    assert table.loc[table["best"], "problem"].tolist() == [0, 1, 2, 3]
    assert table.loc[table["best"] & (table["problem"] == slowest), "latency_ns"].iloc[0] > (
        table["latency_ns"].min())


def test_a_problem_with_only_flagged_points_has_no_best(partial: Path) -> None:
    table = sweep(str(partial), {"width": [256, 512], "tile": [512]}, workers=1)
    by_width = table.set_index("width")
    assert not by_width.loc[256, "best"] and by_width.loc[256, "flag"].startswith("no instr")
    assert by_width.loc[512, "best"]


def test_rank_without_shape_names_is_one_problem() -> None:
    rows = [{c: None for c in RESULT_COLUMNS} | {"latency_ns": ns, "latency_us": ns / 1000}
            for ns in (300.0, 100.0, 200.0)]
    table = rank([{"a": 1}, {"a": 2}, {"a": 3}], rows)
    assert table["a"].tolist() == [2, 3, 1] and table["problem"].tolist() == [0, 0, 0]
    assert table["best"].tolist() == [True, False, False]


# --- command line and plot -------------------------------------------------------------------------

def test_cli_groups_problems_and_reports_the_flag(partial: Path, capsys) -> None:
    argv = ["sweep", str(partial), "--param", "width=512,256", "--param", "tile=128,512",
            "--workers", "1"]
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "flag" in lines[0].split()
    starred = [ln for ln in lines if ln.startswith("*")]
    assert len(starred) == 2  # one best per problem (width 256: tile 128 is its only good point)
    assert lines[3] == ""  # a blank line between the two problems
    assert lines[-1].startswith("1 of 4 point(s) flagged, never ranked best; point 3: no "
                                "instruction recorded")
    assert cli.main(argv + ["--top", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln[:1] for ln in lines[1:4]] == ["*", "", "*"] and lines[2] == ""
    assert lines[4] == "(2 more rows; --top N to show N rows per problem)"


def test_plot_colours_and_separates_problems(partial: Path, tmp_path: Path) -> None:
    table = sweep(str(partial), {"width": [512, 256], "tile": [128, 512]}, workers=1,
                  out=tmp_path / "o")
    colours = bar_colours(table)
    flagged = table["flag"].notna().tolist()
    assert colours == ["#E08214" if b else "#E6D36A" if f else "#9DB4D3"
                       for b, f in zip(table["best"], flagged)]
    assert problem_lines(table["problem"].tolist()) == [1.5]
    png = (tmp_path / "o" / "sweep.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    # A plot of many problems keeps some points of each.
    many = rank([{"w": w, "t": t} for w in range(30) for t in range(5)],
                [{c: None for c in RESULT_COLUMNS} | {"latency_ns": float(t), "latency_us": t
                                                       / 1000} for w in range(30)
                 for t in range(5)], shape=("w",))
    assert np.all(many.groupby("problem")["best"].sum() == 1)
    save_sweep_plot(many, tmp_path / "many.png")
    assert (tmp_path / "many.png").stat().st_size > 0
