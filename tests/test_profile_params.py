"""``profile FILE --param NAME=VALUE`` (a kernel at a real size) and ``sweep --out`` writing
the best point's full report (issue 27, item 4)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import neuroncore_sim as ncs
from neuroncore_sim import cli
from neuroncore_sim.config import load_config, override
from neuroncore_sim.sweep.kernel_file import example_inputs, load_kernel_file

BLOCKED = Path(__file__).resolve().parent.parent / "kernels" / "matmul_blocked.py"


def _latency(config=None, n_block=4, **shape) -> float:
    module = load_kernel_file(BLOCKED)
    pos, kw = example_inputs(module, BLOCKED, **shape)
    return ncs.simulate(module.kernel, *pos, functional=False, config=config, n_block=n_block,
                        **kw).latency_ns


def _printed_latency(text: str) -> float:
    line = next(x for x in text.splitlines() if x.startswith("latency    :"))
    return float(line.split(":")[1].split("ns")[0].replace(",", ""))


def test_profile_param_sets_example_inputs_and_kernel_keywords(capsys):
    assert cli.main(["profile", str(BLOCKED), "--param", "M=256", "--param", "n_block=2"]) == 0
    text = capsys.readouterr().out
    assert "== launch 1: kernel (M=256, n_block=2)" in text
    assert _printed_latency(text) == pytest.approx(_latency(M=256, n_block=2), abs=0.5)
    assert _latency(M=256, n_block=2) != _latency()  # the parameters changed the launch
    # the reference is called with the kernel keyword it takes, on the point's inputs: then the
    # two agree to the last bf16 place (0 with one BLAS build, 0.0625, one bf16 ulp of the
    # outputs near 16, with another, whose fp32 sums round differently); on the wrong
    # inputs the error would be of the size of the outputs (about 16)
    error = re.search(r"result check: max abs error vs .* = ([0-9.e+-]+)\n", text)
    assert error and float(error.group(1)) <= 0.125, text


def test_profile_param_sets_a_config_field(capsys):
    assert cli.main(["profile", str(BLOCKED), "--timing-only",
                     "--param", "config.dma_engines=4"]) == 0
    fewer = override(load_config("trn1"), {"dma_engines": 4}, "test")
    assert _printed_latency(capsys.readouterr().out) == pytest.approx(_latency(fewer), abs=0.5)


@pytest.mark.parametrize("argv, message", [
    (["--param", "M=128,256"], "--param M: expected one value (NAME=VALUE), found 2"),
    (["--param", "Q=4"], "sweep parameter 'Q'; expected a parameter of example_inputs"),
    (["--param", "M"], "--param: expected NAME=V1,V2,..., found 'M'"),
])
def test_bad_profile_param_is_a_usage_error(argv, message, capsys):
    assert cli.main(["profile", str(BLOCKED), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_sweep_out_writes_the_best_points_full_report(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert cli.main(["sweep", str(BLOCKED), "--param", "n_block=1,2", "--workers", "1",
                     "--no-progress", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    table = __import__("pandas").read_csv(out / "sweep.csv")
    best = table[table["best"]].iloc[0]
    assert f"wrote {out / 'best'}/: the full report of the best point (n_block={best['n_block']})" \
        in text
    assert {p.name for p in (out / "best").iterdir()} == {
        "summary.json", "summary.txt", "events.csv", "timeline.png", "trace.json"}
    summary = json.loads((out / "best" / "summary.json").read_text())
    assert summary["latency_ns"] == pytest.approx(best["latency_ns"])


def test_sweep_of_several_problems_writes_one_best_report_each(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert cli.main(["sweep", str(BLOCKED), "--param", "M=128,256", "--param", "n_block=2,4",
                     "--workers", "1", "--no-progress", "--out", str(out)]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["best_problem0",
                                                                   "best_problem1"]
    for problem, m in ((0, 128), (1, 256)):
        summary = json.loads((out / f"best_problem{problem}" / "summary.json").read_text())
        assert summary["dma_bytes"] > 0
        assert summary["latency_ns"] == pytest.approx(min(_latency(M=m, n_block=b)
                                                          for b in (2, 4)))
