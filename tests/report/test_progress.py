"""Progress bars: the hooks of tracing and timing, the tqdm factory, ncs.simulate(progress=)
and the command line's --no-progress."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl
from neuroncore_sim import cli
from neuroncore_sim.report import progress
from neuroncore_sim.errors import UnsupportedError
from neuroncore_sim.frontend.tracer import RECORD_REPORT_EVERY
from neuroncore_sim.simulate import trace
from neuroncore_sim.timing.engines import simulate_timing

N_ADDS = 600


@nki.jit
def many_adds(a):
    """1 load + N_ADDS vector adds + 1 store."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    for _ in range(N_ADDS):
        t = nl.add(t, 1.0)
    nl.store(out, value=t)
    return out


class Recorder:
    """A progress factory that remembers every bar and every update."""

    def __init__(self) -> None:
        self.bars: list[dict] = []

    def __call__(self, description: str, total: int | None) -> "Recorder":
        self.bars.append({"description": description, "total": total, "updates": [],
                          "closed": False})
        return self

    def update(self, done: int) -> None:
        self.bars[-1]["updates"].append(done)

    def close(self) -> None:
        self.bars[-1]["closed"] = True


A = np.zeros((128, 8), np.float32)
N_INSTR = N_ADDS + 2


def test_simulate_reports_tracing_then_timing():
    rec = Recorder()
    res = ncs.simulate(many_adds, A, progress=rec)
    assert len(res.program.instructions) == N_INSTR
    tracing, timing = rec.bars
    assert tracing["description"] == "many_adds: tracing" and tracing["total"] is None
    # every RECORD_REPORT_EVERY recorded instructions, then the final count
    assert tracing["updates"] == [256, 512, N_INSTR]
    assert RECORD_REPORT_EVERY == 256
    assert timing["description"] == "many_adds: timing" and timing["total"] == N_INSTR
    assert timing["updates"][-1] == N_INSTR
    assert timing["updates"] == sorted(timing["updates"])
    assert tracing["closed"] and timing["closed"]


def test_timing_hook_counts_finished_instructions():
    program = trace(many_adds, A, functional=False).program
    seen: list[int] = []
    simulate_timing(program, ncs.TRN1, seen.append)
    # 602 instructions / 200 = every 3rd, plus the last one (602 is not a multiple of 3).
    assert seen == list(range(3, N_INSTR, 3)) + [N_INSTR]


def test_no_progress_by_default_and_bad_value(capsys):
    ncs.simulate(many_adds, A, functional=False)
    assert capsys.readouterr().err == ""
    with pytest.raises(UnsupportedError, match="expected True, False or a factory"):
        ncs.simulate(many_adds, A, progress="yes")


def test_progress_true_draws_tqdm_on_stderr(capsys, monkeypatch):
    monkeypatch.setattr(progress, "BAR_DELAY_S", 0.0)
    ncs.simulate(many_adds, A, functional=False, progress=True)
    err = capsys.readouterr().err
    assert "many_adds: tracing" in err and "many_adds: timing" in err
    assert f"/{N_INSTR}" in err  # the timing bar knows its total


@pytest.mark.parametrize("tty, flags, drawn", [
    (True, [], True), (True, ["--no-progress"], False), (False, [], False)])
def test_cli_progress_only_on_a_terminal(tmp_path, capsys, monkeypatch, tty, flags, drawn):
    monkeypatch.setattr(progress, "BAR_DELAY_S", 0.0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    relu = Path(__file__).resolve().parents[2] / "kernels" / "relu.py"
    assert cli.main(["profile", *flags, "--timing-only", str(relu)]) == 0
    assert ("timing" in capsys.readouterr().err) == drawn


def test_cli_progress_on_a_log_is_a_line_now_and_then(capsys, monkeypatch):
    """Issue 25: a long launch whose stderr is a log or a pipe says how far it got, in lines;
    a short one (under LOG_AFTER_S) says nothing (the test above)."""
    monkeypatch.setattr(progress, "LOG_AFTER_S", 0.0)
    monkeypatch.setattr(progress, "LOG_EVERY_S", 3600.0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    relu = Path(__file__).resolve().parents[2] / "kernels" / "relu.py"
    assert cli.main(["profile", "--timing-only", str(relu)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert [line.split(":")[1] for line in lines] == [" kernel", " kernel"], lines
    assert re.fullmatch(r"neuroncore-sim: kernel: tracing: [\d,]+ instructions \(\d+ s\)",
                        lines[0])
    assert re.fullmatch(r"neuroncore-sim: kernel: timing: [\d,]+ of [\d,]+ instructions "
                        r"\(\d+ s\)", lines[1])
    assert cli.main(["profile", "--no-progress", "--timing-only", str(relu)]) == 0
    assert capsys.readouterr().err == ""
