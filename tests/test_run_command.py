"""`neuroncore-sim run SCRIPT.py [ARGS...]`: every kernel launch of a script is timed, whichever
NKI entry point made it; the script's arguments are its own; a script that fails or exits
early is reported as such."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim import cli, nki
from neuroncore_sim.errors import UnsupportedError
from neuroncore_sim.simulate import simulate_launch

ROOT = Path(__file__).resolve().parent.parent
GIOU_SCRIPT = ROOT / "tests" / "scripts" / "giou_simulate_kernel.py"
REPORT_FILES = {"summary.json", "summary.txt", "events.csv", "timeline.png", "trace.json",
                "parquet"}

HEADER = '''
import sys
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl


def double(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))
    return out


x = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
'''


def _script(tmp_path: Path, body: str, name: str = "user.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def _latencies(stdout: str) -> list[float]:
    """The latency (ns) of every launch summary printed by run."""
    return [float(v.replace(",", "")) for v in re.findall(r"^latency\s*: ([\d,.]+) ns", stdout,
                                                           re.M)]


# --- the seed use case: nki.trace + nki.simulate_kernel --------------------------------------

def test_giou_script_with_trace_and_simulate_kernel_is_timed_and_reported(tmp_path, capsys):
    out = tmp_path / "reports"
    assert cli.main(["run", "--no-progress", "--out", str(out), str(GIOU_SCRIPT),
                     "--boxes", "128"]) == 0
    text = capsys.readouterr().out
    error = float(re.search(r"max abs error (\S+)", text).group(1))
    assert error < 1e-5
    assert "== launch 1: kernel (nki.simulate_kernel)" in text
    (latency,) = _latencies(text)
    assert latency > 0
    folder = out / "launch1_kernel"
    assert {p.name for p in folder.iterdir()} == REPORT_FILES
    # (the text prints whole ns)
    assert json.loads((folder / "summary.json").read_text())["latency_ns"] == pytest.approx(
        latency, abs=0.5)


def test_giou_script_through_the_installed_command_line(tmp_path):
    """The same, as a user types it (python -m neuroncore_sim, a separate process)."""
    out = tmp_path / "reports"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "neuroncore_sim", "run", "--out", str(out),
                           str(GIOU_SCRIPT), "--boxes", "128"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "timing=False" not in done.stderr
    assert _latencies(done.stdout)[0] > 0
    assert {p.name for p in (out / "launch1_kernel").iterdir()} == REPORT_FILES


# --- every entry point is timed under run -----------------------------------------------------

ENTRY_POINTS = {
    "jit call": ("y = nki.jit(double)(x)", "nki.jit"),
    "jit decorator with mode": ("y = nki.jit(mode='simulation')(double)(x)", "nki.jit"),
    "trace call": ("y = nki.trace(double)(x)", "nki.jit"),
    "kernel[grid]": ("y = nki.jit(double)[2](x)", "nki.jit"),
    "baremetal": ("y = nki.baremetal(double)(x)", "nki.baremetal"),
    "baremetal with options": ("y = nki.baremetal(save_neff_name='k.neff')(double)(x)",
                               "nki.baremetal"),
    "jit mode=baremetal": ("y = nki.jit(double, mode='baremetal')(x)", "nki.baremetal"),
    "simulate_kernel of a plain function": ("y = nki.simulate_kernel(double, x)",
                                            "nki.simulate_kernel"),
    "simulate_kernel of trace": ("y = nki.simulate_kernel(nki.trace(double), x)",
                                 "nki.simulate_kernel"),
    "simulate_kernel of jit(mode=...)[grid]": (
        "y = nki.simulate_kernel(nki.jit(mode='simulation')(double)[2], x)",
        "nki.simulate_kernel"),
    "benchmark decorator": ("b = nki.benchmark(warmup=1, iters=2)(double)\nb(x)\n"
                            "y = 2 * x\n"
                            "assert b.benchmark_result.nc_latency.get_latency_percentile(50) > 0",
                            "nki.benchmark"),
    "benchmark with the kernel first": ("nki.benchmark(double, save_neff_name='k.neff')(x)\n"
                                        "y = 2 * x", "nki.benchmark"),
    "profile": ("import tempfile\n"
                "y = nki.profile(working_directory=tempfile.mkdtemp())(double)(x)",
                "nki.profile"),
    "neuroncore_sim.simulate(timing=False)": (
        "import neuroncore_sim as ncs\n(y,) = ncs.simulate(double, x, timing=False).outputs",
        "neuroncore_sim.simulate"),
}


@pytest.mark.parametrize("call, entry", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
def test_every_entry_point_is_timed_under_run(tmp_path, capsys, call, entry):
    script = _script(tmp_path, call + "\nassert np.array_equal(y, 2 * x)\nprint('values ok')\n")
    assert cli.main(["run", "--no-progress", str(script)]) == 0
    text = capsys.readouterr().out
    assert "values ok" in text
    assert f"== launch 1: double ({entry})" in text and "== launch 2" not in text
    (latency,) = _latencies(text)
    assert latency > 0


def test_launches_from_the_scripts_threads_are_timed(tmp_path, capsys):
    script = _script(tmp_path, """
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:
            ys = list(pool.map(lambda a: nki.simulate_kernel(double, a), [x, x + 1]))
        assert np.array_equal(ys[1], 2 * (x + 1))
        """)
    assert cli.main(["run", "--no-progress", str(script)]) == 0
    text = capsys.readouterr().out
    # both collected; identical (same kernel, shapes, entry), so reported once with the count
    assert "== launch 1: double (nki.simulate_kernel): 2 identical launches (1-2)" in text
    (latency,) = _latencies(text)
    assert latency > 0


def test_simulate_kernel_launches_follow_config_and_timing_only(tmp_path, capsys):
    script = _script(tmp_path, "y = nki.simulate_kernel(double, x)\nprint('returned', y)\n")
    assert cli.main(["run", "--no-progress", "--config", "inf2", "--timing-only",
                     str(script)]) == 0
    text = capsys.readouterr().out
    assert "returned None" in text  # --timing-only: no values, as documented
    assert "config     : inf2" in text and _latencies(text)[0] > 0


def test_record_launches_times_every_entry_point_in_python(tmp_path):
    a = np.ones((128, 16), np.float32)

    def double(t):
        out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(t), 2.0))
        return out

    with ncs.record_launches(config="inf2") as launches:
        np.testing.assert_array_equal(nki.simulate_kernel(double, a), 2 * a)
        nki.benchmark(double)(a)
        nki.profile(working_directory=str(tmp_path))(double)(a)
        nki.baremetal(double)(a)
        ncs.simulate(double, a, config="trn1", timing=False)  # its own config is kept
    assert [r.entry for r in launches] == ["nki.simulate_kernel", "nki.benchmark",
                                           "nki.profile", "nki.baremetal",
                                           "neuroncore_sim.simulate"]
    assert all(r.latency_ns > 0 for r in launches)
    assert [r.config.name for r in launches] == ["inf2"] * 4 + ["trn1"]


# --- outside run: values only, and a clear answer to a timing request --------------------------

def _double(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(t), 2.0))
    return out


def test_simulate_kernel_outside_run_skips_the_timing_model(monkeypatch):
    def no_timing(*args, **kwargs):
        raise AssertionError("simulate_kernel ran the timing model outside run")

    # (neuroncore_sim.simulate is also the function's name: reach the module through sys.modules)
    monkeypatch.setattr(sys.modules["neuroncore_sim.simulate"], "simulate_timing", no_timing)
    a = np.ones((128, 16), np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(_double, a), 2 * a)
    np.testing.assert_array_equal(nki.jit(_double)(a), 2 * a)


@pytest.mark.parametrize("entry, says", [
    ("nki.simulate_kernel", "launched through nki.simulate_kernel, which computes values only"),
    ("neuroncore_sim.simulate", "simulated with neuroncore_sim.simulate(..., timing=False)")])
def test_timing_request_on_an_untimed_launch_says_why_and_how(entry, says):
    res = simulate_launch(_double, (np.ones((128, 16), np.float32),), {}, timing=False,
                          entry=entry)
    with pytest.raises(UnsupportedError) as info:
        res.latency_ns
    message = str(info.value)
    assert message.startswith("test_run_command.py:")  # the kernel's def line
    assert says in message and "neuroncore-sim run SCRIPT.py" in message
    assert "neuroncore_sim.simulate(kernel, *args)" in message


# --- the script's arguments --------------------------------------------------------------------

def test_a_run_option_after_the_script_goes_to_the_script_with_a_note(tmp_path, capsys):
    saved = tmp_path / "values.npy"
    assert cli.main(["run", "--no-progress", str(GIOU_SCRIPT), "--boxes", "128",
                     "--out", str(saved)]) == 0
    captured = capsys.readouterr()
    assert np.load(saved).shape == (128, 1)  # the script saved its values there
    assert "wrote " not in captured.out  # run wrote no reports
    note = captured.err.strip()
    assert note.startswith(f"neuroncore-sim: note: --out after {GIOU_SCRIPT} was passed to the "
                           "script")
    assert f"neuroncore-sim run --out DIR {GIOU_SCRIPT}" in note  # how to give it to run
    assert note.count("\n") == 0  # --boxes is not an option of run: no note for it


@pytest.mark.parametrize("argv, script_args", [
    (["--debug", "{s}", "--debug", "-h"], ["--debug", "-h"]),
    (["{s}", "--config=inf2"], ["--config=inf2"]),
    (["--config", "inf2", "{s}", "a", "--", "--out", "x"], ["a", "--", "--out", "x"]),
    (["--trace", "5", "{s}", "5"], ["5"]),   # an abbreviated option of run takes its value
    (["--no-progress", "--", "{s}", "-x"], ["-x"]),
])
def test_script_arguments_are_passed_as_python_would(tmp_path, capsys, argv, script_args):
    script = tmp_path / "args.py"
    script.write_text("import sys\nprint('ARGV', sys.argv[1:])\n")
    assert cli.main(["run"] + [a.replace("{s}", str(script)) for a in argv]) == 0
    assert f"ARGV {script_args}" in capsys.readouterr().out


def test_the_run_option_table_knows_every_option_of_run(capsys):
    _, options = cli._parser()
    assert cli.main(["run", "--help"]) == 0
    listed = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", capsys.readouterr().out))
    assert listed == set(options)


# --- how the script ended ----------------------------------------------------------------------

def test_exception_before_any_launch_shows_the_scripts_traceback(tmp_path, capsys):
    script = _script(tmp_path, '''
        def load_settings(path):
            return {}["batch"]

        load_settings("settings.toml")
        nki.jit(double)(x)
        ''', name="fails.py")
    assert cli.main(["run", str(script)]) == 1
    captured = capsys.readouterr()
    assert "no kernel launches recorded" not in captured.out + captured.err
    err = captured.err
    assert err.startswith("neuroncore-sim: fails.py raised KeyError before any kernel launch "
                          "finished; its traceback:\nTraceback (most recent call last):\n")
    line = script.read_text().splitlines().index('    return {}["batch"]') + 1
    assert f'fails.py", line {line}, in load_settings' in err and "KeyError: 'batch'" in err
    assert "runpy" not in err and "cli.py" not in err  # the script's frames only


def test_syntax_error_is_shown_as_python_shows_it(tmp_path, capsys):
    script = tmp_path / "typo.py"
    script.write_text("y = (1,\n")
    assert cli.main(["run", str(script)]) == 1
    err = capsys.readouterr().err
    assert "typo.py raised SyntaxError before any kernel launch finished" in err
    assert "was never closed" in err


@pytest.mark.parametrize("exit_call, status, printed", [
    ("sys.exit(3)", 3, ""), ("sys.exit('no input file')", 1, "no input file\n")])
def test_exit_before_any_launch_is_reported_with_its_status(tmp_path, capsys, exit_call,
                                                            status, printed):
    script = _script(tmp_path, exit_call + "\nnki.jit(double)(x)\n", name="quits.py")
    assert cli.main(["run", str(script)]) == status
    captured = capsys.readouterr()
    assert captured.err == (printed + f"neuroncore-sim: quits.py exited with status {status} "
                            "before any kernel launch finished\n")
    assert "no kernel launches recorded" not in captured.out


def test_exit_zero_after_launches_still_gets_the_reports(tmp_path, capsys):
    out = tmp_path / "reports"
    script = _script(tmp_path, "nki.simulate_kernel(double, x)\nnki.jit(double)(x)\n"
                               "sys.exit(0)\n")
    assert cli.main(["run", "--no-progress", "--out", str(out), str(script)]) == 0
    captured = capsys.readouterr()
    assert len(_latencies(captured.out)) == 2 and captured.err == ""
    assert sorted(p.name for p in out.iterdir()) == ["index.md", "launch1_double",
                                                     "launch2_double"]


def test_nonzero_exit_after_launches_reports_them_and_keeps_the_status(tmp_path, capsys):
    script = _script(tmp_path, "nki.simulate_kernel(double, x)\nsys.exit(4)\n", name="ex.py")
    assert cli.main(["run", "--no-progress", str(script)]) == 4
    captured = capsys.readouterr()
    assert len(_latencies(captured.out)) == 1
    assert captured.err == ("neuroncore-sim: ex.py exited with status 4 after 1 kernel launch "
                            "(reported above)\n")


def test_script_without_launches_says_which_calls_would_have_been_timed(tmp_path, capsys):
    script = _script(tmp_path, "print('only numpy here', (2 * x).sum())\n", name="plain.py")
    assert cli.main(["run", str(script)]) == 0
    text = capsys.readouterr().out
    assert ("no kernel launches recorded: plain.py ran to its end without launching a kernel"
            in text)
    assert "nki.simulate_kernel" in text and "nki.jit" in text


# --- warnings point at the user's launching line, whichever entry point ---------------------

def _reads_garbage(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    junk = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)  # never written
    nl.store(out, value=nl.add(nl.load(t), junk))
    return out


@pytest.mark.parametrize("launch", [
    lambda a, d: ncs.simulate(_reads_garbage, a),
    lambda a, d: nki.simulate_kernel(_reads_garbage, a),
    lambda a, d: nki.jit(_reads_garbage)(a),
    lambda a, d: nki.profile(working_directory=str(d))(_reads_garbage)(a)],
    ids=["simulate", "simulate_kernel", "jit", "profile"])
def test_kernel_warnings_are_attributed_to_the_launching_line(tmp_path, launch):
    with pytest.warns(UserWarning) as warned:
        launch(np.ones((128, 16), np.float32), tmp_path)
    assert {Path(w.filename).name for w in warned} == {"test_run_command.py"}
