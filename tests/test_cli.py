"""neuroncore-sim command line, end to end (in process, through cli.main)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from neuroncore_sim import cli

KERNELS = Path(__file__).resolve().parent.parent / "kernels"

SCRIPT = '''
import sys
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl

@nki.jit
def add_one(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, value=nl.add(t, 1.0))
    return out

x = np.zeros((128, 64), np.float32)
y = add_one(x)
assert float(y[0, 0]) == 1.0
print("script args:", sys.argv[1:])
add_one(y)
'''

BROKEN = '''
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl

@nki.jit
def bad(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(a))  # a is in HBM: must be loaded first
    return out

bad(np.zeros((128, 64), np.float32))
'''


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_run_times_every_launch_and_writes_reports(tmp_path, capsys):
    script = _write(tmp_path, "user.py", SCRIPT)
    out = tmp_path / "out"
    assert cli.main(["run", "--out", str(out), str(script), "--flag", "7"]) == 0
    text = capsys.readouterr().out
    assert "script args: ['--flag', '7']" in text
    # the two launches are identical (kernel, shapes, dtypes, config): reported once
    assert "== launch 1: add_one (nki.jit): 2 identical launches (1-2)" in text
    assert "== launch 2" not in text
    # and where the whole run's device time went, per kernel and per layer
    assert "== all launches: 2 launches, 1 distinct" in text
    assert "per kernel" in text and "per layer" in text
    assert "over 2 launches (1 distinct)" in text
    assert "latency" in text and "bottleneck" in text
    assert sorted(p.name for p in out.iterdir()) == ["index.md", "launch1_add_one"]
    assert "| 1 | add_one | nki.jit | 2 | 1-2 |" in (out / "index.md").read_text()
    for n in (1,):
        folder = out / f"launch{n}_add_one"
        names = {p.name for p in folder.iterdir()}
        assert names == {"summary.json", "summary.txt", "events.csv", "timeline.png",
                         "trace.json", "parquet"}
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["latency_ns"] > 0
        assert summary["critical_path"]["length_ns"] == pytest.approx(summary["latency_ns"],
                                                                      abs=0.01)
        assert {"memory_bound", "compute_bound", "perfect_pipeline", "bn_speedup"} <= set(summary)
        assert isinstance(summary["advice"], list)
        assert "traceEvents" in json.loads((folder / "trace.json").read_text())
        assert (folder / "events.csv").read_text().startswith("instr_id,engine,opcode")


def test_run_config_retimes_launches(tmp_path, capsys):
    script = _write(tmp_path, "user.py", SCRIPT)
    assert cli.main(["run", "--config", "inf2", str(script)]) == 0
    assert "config     : inf2" in capsys.readouterr().out


def test_kernel_error_is_one_clean_line(tmp_path, capsys):
    script = _write(tmp_path, "broken.py", BROKEN)
    assert cli.main(["run", str(script)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: broken.py:9: nl.exp")
    assert "Traceback" not in err and err.count("\n") == 1
    assert cli.main(["run", "--debug", str(script)]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_launches_before_a_kernel_error_are_still_reported(tmp_path, capsys):
    script = _write(tmp_path, "late.py", SCRIPT + "\n" + BROKEN.split("@nki.jit", 1)[1]
                    .replace("def bad", "@nki.jit\ndef bad"))
    assert cli.main(["run", str(script)]) == 1
    captured = capsys.readouterr()
    # the two add_one launches, identical: reported once
    assert "== launch 1: add_one (nki.jit): 2 identical launches (1-2)" in captured.out
    assert captured.err.startswith("error: late.py:") and captured.err.count("\n") == 1


def test_profile_sample_kernel(tmp_path, capsys):
    target = f"{KERNELS / 'tensor_add.py'}::kernel"
    assert cli.main(["profile", target, "--timing-only", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "kernel (grid [2, 2])" in text and "cycles of the TensorE clock" in text
    assert (tmp_path / "launch1_kernel" / "timeline.png").stat().st_size > 10_000
    summary = (tmp_path / "launch1_kernel" / "summary.txt").read_text()
    # (the table headings say their units: "per engine (busy_ns ...):")
    for section in ("roofline   :", "\nper engine (", "\ndma (all engines; ", "stalls:",
                    "memory per allocation site:", "\nper source line ("):
        assert section in summary


def test_trace_max_events(tmp_path, capsys):
    target = f"{KERNELS / 'tensor_add.py'}::kernel"
    assert cli.main(["profile", target, "--timing-only", "--out", str(tmp_path),
                     "--trace-max-events", "5"]) == 0
    assert "trace.json: first 5 of 196 events (--trace-max-events)" in capsys.readouterr().out
    trace = json.loads((tmp_path / "launch1_kernel" / "trace.json").read_text())
    assert sum(1 for e in trace["traceEvents"] if e["ph"] == "X") == 5
    assert trace["otherData"]["truncated"]["total"] == 196  # 4 instances x (3 DMAs x 16 transfers + 1 add)


@pytest.mark.parametrize("argv, code", [
    ([], 2),
    (["--help"], 0),
    (["run", "--help"], 0),
    (["profile", "no_such_file.py::k"], 2),
    (["profile", f"{KERNELS / 'tensor_add.py'}::nope"], 2),
    (["profile", f"{KERNELS / 'layernorm.py'}"], 2),  # two kernels: must name one
    (["run", "no_such_script.py"], 2),
    (["profile", "--trace-max-events", "-1", f"{KERNELS / 'tensor_add.py'}"], 2),
    (["profile", f"{KERNELS / 'run_sample.py'}"], 2),  # a script, not a kernel file
])
def test_exit_codes(argv, code, capsys):
    assert cli.main(argv) == code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("flag, value, minimum", [
    ("--workers", "0", 1), ("--top", "0", 1), ("--check-max-elements", "-1", 0),
    ("--workers", "two", 1)])
def test_sweep_counts_are_checked_on_the_command_line(flag, value, minimum, capsys):
    argv = ["sweep", f"{KERNELS / 'relu.py'}", "--param", "x=1", flag, value]
    assert cli.main(argv) == 2
    assert f"argument {flag}: expected an integer >= {minimum}, found '{value}'" in (
        capsys.readouterr().err)


def test_profile_of_a_script_points_to_run(capsys):
    assert cli.main(["profile", f"{KERNELS / 'run_sample.py'}"]) == 2
    path = KERNELS / "run_sample.py"
    assert "found no example_inputs(), kernel or KERNELS (its functions: " in (
        err := capsys.readouterr().err)
    assert err.endswith(f"to time the kernel launches of a script, use `neuroncore-sim run "
                        f"{path}`\n")


def test_bad_config_is_a_clean_error(capsys):
    assert cli.main(["profile", "--config", "trn9", f"{KERNELS / 'tensor_add.py'}"]) == 2
    assert capsys.readouterr().err.startswith(
        "neuroncore-sim: error: config: expected a preset name")


def test_run_uses_config_and_timing_only(tmp_path, capsys):
    script = tmp_path / "two_configs.py"
    script.write_text(
        "import numpy as np\n"
        "from neuronxcc import nki\n"
        "import neuronxcc.nki.language as nl\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    nl.store(out, value=nl.exp(nl.load(a)))\n"
        "    return out\n"
        "print('returned', type(k(np.ones((128, 512), np.float32))).__name__)\n")
    toml = tmp_path / "slow_dma.toml"
    toml.write_text("dma_engine_bytes_per_ns = 1.0\n")
    from neuroncore_sim import cli
    from neuroncore_sim.simulate import record_launches
    assert cli.main(["run", str(script)]) == 0
    base = capsys.readouterr().out
    assert "returned ndarray" in base
    assert cli.main(["run", "--timing-only", "--config", str(toml), str(script)]) == 0
    slow = capsys.readouterr().out
    assert "returned NoneType" in slow
    with record_launches(config=str(toml), functional=False) as launches:
        pass  # no launch inside: the recorder only carries the settings
    assert len(launches) == 0 and launches.config.dma_engine_bytes_per_ns == 1.0
