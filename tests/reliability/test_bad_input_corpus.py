"""The bad-input corpus of issue 19 (``tests/reliability/corpus``): every case gives a
SimulatorError subclass (or, for kernels the compiler accepts, a SimulatorWarning) naming the
kernel's ``file.py:LINE``, a command line gives its exit status and one clear stderr line, and
nothing on disk is left half-written."""

from __future__ import annotations

import csv
import inspect
import json
import re
import warnings
from pathlib import Path

import pytest

import neuroncore_sim as ncs
from neuroncore_sim import cli
from neuroncore_sim.errors import SimulatorError, SimulatorWarning

from .corpus import bad_kernels as kernels
from .corpus.cases import (CLI_CASES, CONFIG_CASES, FILES, KERNEL_CASES, RULES,
                           TRACEBACK_EXPECTED, CliCase, ConfigCase, KernelCase)

KERNELS_FILE = Path(inspect.getsourcefile(kernels)).name
_KERNEL_SOURCE = Path(inspect.getsourcefile(kernels)).read_text().splitlines()


def _bad_line(lines: list[str], case_id: str | None = None) -> int:
    """The line marked ``# BAD`` (``# BAD <case_id>`` when given)."""
    mark = re.compile(rf"# BAD {case_id}\b" if case_id else r"# BAD\b")
    found = [i for i, line in enumerate(lines, 1) if mark.search(line)]
    assert len(found) == 1, f"{case_id or 'a file'}: expected one # BAD line, found {found}"
    return found[0]


# --- kernels ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", KERNEL_CASES, ids=[c.id for c in KERNEL_CASES])
def test_kernel_case(case: KernelCase) -> None:
    loc = f"{KERNELS_FILE}:{_bad_line(_KERNEL_SOURCE, case.id)}"

    args = case.args()

    def launch() -> object:
        if case.direct:
            return case.kernel(*args, **case.kwargs)
        return ncs.simulate(case.kernel, *args, timing=False, **case.kwargs)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if issubclass(case.error, SimulatorError):
            with pytest.raises(SimulatorError) as info:
                launch()
            error = info.value
            assert isinstance(error, case.error), f"{type(error).__name__}: {error}"
            assert error.loc == loc, str(error)
            message = str(error)
            assert message.startswith(f"{loc}: "), message
        else:
            assert issubclass(case.error, SimulatorWarning)
            launch()
            found = [str(w.message) for w in caught if issubclass(w.category, case.error)]
            assert len(found) == 1, [str(w.message) for w in caught]
            message = found[0]
            assert message.startswith(f"{loc}: "), message
    assert re.search(case.message, message), message
    for path in (a for a in args if isinstance(a, str)):  # a file given where a folder goes
        assert Path(path).read_text() == "keep me\n"
        Path(path).unlink()


# --- command lines ------------------------------------------------------------------------------
def _write_files(folder: Path) -> None:
    folder.mkdir()
    for name, text in FILES.items():
        path = folder / name
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _assert_whole(path: Path, data: bytes) -> None:
    """A file the command wrote is complete: it parses as what its name says."""
    if path.suffix == ".json":
        json.loads(data)
    elif path.suffix == ".jsonl":
        assert data.endswith(b"\n"), path
        for line in data.decode().splitlines():
            json.loads(line)
    elif path.suffix == ".csv":
        rows = list(csv.reader(data.decode().splitlines()))
        assert rows and all(len(r) == len(rows[0]) for r in rows), path
    elif path.suffix == ".png":
        assert data.startswith(b"\x89PNG") and data[-8:-4] == b"IEND", path
    else:
        assert data, path


def _assert_nothing_half_written(root: Path, before: dict[str, bytes]) -> None:
    after = _files(root)
    hidden = [p for p in root.rglob(".*")]
    assert not hidden, f"temporary files left: {hidden}"
    for name, data in before.items():  # what was there is untouched
        assert after.get(name) == data, f"{name} changed"
    for name in set(after) - set(before):
        _assert_whole(root / name, after[name])
    launches = {p.parent for p in root.rglob("summary.json")}
    for folder in launches:  # a launch's files are all there or none is
        assert {"events.csv", "summary.json", "summary.txt", "timeline.png",
                "trace.json"} <= {p.name for p in folder.iterdir()}, folder


def _prepare_out(out: Path, setup: str | None) -> None:
    if setup == "file":
        out.write_text("keep me\n")
    elif setup == "points_dir":
        (out / "points.jsonl").mkdir(parents=True)


def _run_cli(case_argv: tuple[str, ...], tmp_path: Path, setup: str | None,
             monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
             ) -> tuple[int, str, str, dict[str, bytes]]:
    d = tmp_path / "in"
    _write_files(d)
    out = tmp_path / "out"
    _prepare_out(out, setup)
    before = _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    status = cli.main([a.format(d=d, out=out) for a in case_argv])
    captured = capsys.readouterr()
    return status, captured.err, captured.out, before


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_cli_case(case: CliCase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  capsys: pytest.CaptureFixture) -> None:
    status, err, out, before = _run_cli(case.argv, tmp_path, case.setup, monkeypatch, capsys)
    assert status == case.status, err
    assert re.search(case.stderr, err, re.MULTILINE), err
    assert re.search(case.stdout, out, re.MULTILINE), out
    if case.id not in TRACEBACK_EXPECTED:
        assert "Traceback" not in err, err
    if case.loc is not None:
        line = _bad_line(FILES[case.loc].splitlines())
        assert f"{case.loc}:{line}" in err + out, err + out
    _assert_nothing_half_written(tmp_path, before)


# --- config fields ------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CONFIG_CASES, ids=[f"{c.field}={c.toml.split('= ')[1]}"
                                                    for c in CONFIG_CASES])
def test_config_field_in_a_toml_file(case: ConfigCase, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "bad.toml").write_text(case.toml + "\n")
    argv = ("profile", "{d}/good.py", "--config", str(tmp_path / "bad.toml"), "--out", "{out}")
    status, err, _, before = _run_cli(argv, tmp_path, None, monkeypatch, capsys)
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"neuroncore-sim: error: config {tmp_path / 'bad.toml'}: "), err
    assert re.search(case.message, err), err
    assert not (tmp_path / "out").exists()  # refused before any work
    _assert_nothing_half_written(tmp_path, before)


SWEEP_CASES = [c for c in CONFIG_CASES if c.param is not None]


@pytest.mark.parametrize("case", SWEEP_CASES, ids=[f"{c.field}={c.param}" for c in SWEEP_CASES])
def test_config_field_as_a_sweep_parameter(case: ConfigCase, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture) -> None:
    argv = ("sweep", "{d}/good.py", "--param", f"config.{case.field}={case.param}",
            "--workers", "1", "--out", "{out}")
    status, err, _, before = _run_cli(argv, tmp_path, None, monkeypatch, capsys)
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"config.{case.field}=" in lines[0], err
    assert re.search(case.message, err), err
    assert "good.py" in err  # the sweep names its kernel file
    assert not (tmp_path / "out" / "points.jsonl").exists()  # refused before any point ran
    _assert_nothing_half_written(tmp_path, before)


def test_the_corpus_is_large_enough() -> None:
    """Issue 19 asks for at least 60 cases of our own; every config field has one of each kind."""
    assert len(KERNEL_CASES) + len(CLI_CASES) >= 60
    from neuroncore_sim.config import field_names
    assert {c.field for c in CONFIG_CASES} == set(field_names())
    assert {c.field for c in SWEEP_CASES} == set(field_names())


def test_every_option_of_every_command_has_a_case() -> None:
    """Each option of every command (profile, run, sweep, compare) appears in a case of it."""
    parser, _ = cli._parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, sub in commands.items():
        options = {o for a in sub._actions for o in a.option_strings} - {"-h", "--help"}
        used = {w.split("=")[0] for c in CLI_CASES if c.argv[:1] == (name,) for w in c.argv}
        assert options <= used, f"{name}: no case for {sorted(options - used)}"


def test_every_rule_of_the_table_has_a_case() -> None:
    """Each error or warning row of docs/frontend.md's "Rules checked" table has cases here."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "frontend.md").read_text()
    table = doc.split("## Rules checked", 1)[1].split("\n\n**", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| rule")]
    ids = {c.id for c in KERNEL_CASES}
    for row in rows:
        raised_as = row.split(" | ")[1]
        if raised_as.strip() in ("—", "-") or not raised_as.strip():
            continue  # a lowering, not an error
        keys = [k for k in RULES if k in row]
        assert keys, f"no corpus case for the rule: {row[:80]}"
        for key in keys:
            assert set(RULES[key]) <= ids, RULES[key]
