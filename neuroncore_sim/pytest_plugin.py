"""pytest plugin: assert a kernel's estimated latency against a stored baseline.

Installed with the package (entry point ``pytest11``), so any test can use the
``cycle_baseline`` fixture::

    def test_my_kernel_stays_fast(cycle_baseline):
        res = ncs.simulate(my_kernel, x, functional=False)
        cycle_baseline(res)                 # compare with the stored baseline (2% by default)
        cycle_baseline(res2, name="wide", rel=0.05)  # a second check in the same test

Baselines live in ``cycle_baselines.json`` next to the test file, keyed by
``"<test file>::<test name>[::<name>]"``, with the latency in ns and in TensorE cycles and each
engine's busy time in ns. ``pytest --update-cycle-baselines`` (re)writes the entries of the
tests that ran. A check fails when the latency moved by more than the relative tolerance, in
either direction (a stale baseline would hide the next regression), or when there is no
baseline yet. Tolerance, first match wins: the ``rel=`` argument, a
``@pytest.mark.cycle_baseline(rel=...)`` marker, the ``cycle_baseline_rel`` ini option, 2%.

Each entry also stores the simulator's timing-model version and the config's fingerprint, so a
check that fails after a recalibration says that the model changed (from what to what) rather
than reporting a regression. A broken baselines file (merge conflict markers, not a JSON object
of entries) fails with its path and what is wrong; ``--update-cycle-baselines`` replaces it.
Files are written atomically (a temporary file renamed over the old one). Recording under
pytest-xdist is refused (each worker would write its own part); comparing works there.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

if TYPE_CHECKING:  # the package (numpy, simpy) loads only when a test uses the fixture
    from .result import SimResult

UPDATE_OPTION = "--update-cycle-baselines"
DEFAULT_REL = 0.02
#: The engines the failure message lists (those whose busy time changed most).
ENGINES_SHOWN = 3

_STORE = pytest.StashKey["_BaselineStore"]()
_MODULE = __name__


def registered_by_entry_point() -> bool:
    """Whether an installed distribution registers this plugin (pytest11 entry point), so a
    conftest must not load it again through ``pytest_plugins``."""
    from importlib.metadata import entry_points

    return any(ep.value == _MODULE for ep in entry_points(group="pytest11"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("neuroncore_sim", "neuroncore_sim cycle baselines")
    group.addoption(UPDATE_OPTION, action="store_true", default=False,
                    help="record the estimated latencies of the tests that run as their new "
                         "cycle baselines (cycle_baselines.json next to each test file)")
    parser.addini("cycle_baseline_rel", default=str(DEFAULT_REL),
                  help="relative tolerance of cycle_baseline checks (default 0.02 = 2%)")
    parser.addini("cycle_baseline_file", default="cycle_baselines.json",
                  help="file name of the cycle baselines, next to each test file")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption(UPDATE_OPTION) and _under_xdist(config):
        raise pytest.UsageError(
            f"{UPDATE_OPTION} cannot run under pytest-xdist (each worker would write its own "
            "part of cycle_baselines.json): run it without -n")
    config.addinivalue_line(
        "markers", "cycle_baseline(rel): relative tolerance of this test's cycle_baseline checks")
    config.stash[_STORE] = _BaselineStore(config.getini("cycle_baseline_file"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    store = session.config.stash.get(_STORE, None)
    if store is not None and session.config.getoption(UPDATE_OPTION):
        store.write()
        if store.errors:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    store = config.stash.get(_STORE, None)
    if store is not None and store.written:
        for path, count in store.written.items():
            terminalreporter.write_line(f"cycle baselines: {count} written to {path}")
    for error in store.errors if store is not None else ():
        terminalreporter.write_line(f"error: {error}", red=True)


def _under_xdist(config: pytest.Config) -> bool:
    """Whether this session is an xdist worker or a controller that starts workers."""
    if hasattr(config, "workerinput"):
        return True
    numprocesses = getattr(config.option, "numprocesses", None)
    return numprocesses not in (None, 0, "0")


class BaselineFileError(Exception):
    """A cycle baselines file that cannot be read as one."""


class _BaselineStore:
    """The baseline files of a session: read lazily, updated entries written at the end."""

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self._files: dict[Path, dict[str, Any]] = {}
        self._updates: dict[Path, dict[str, Any]] = {}
        self.written: dict[Path, int] = {}
        self.errors: list[str] = []  # files that could not be written, said at the end

    def path_for(self, test_file: Path) -> Path:
        return test_file.parent / self.file_name

    def get(self, path: Path, key: str) -> dict[str, Any] | None:
        """The entry ``key`` of ``path`` (None when absent); BaselineFileError when the file or
        the entry is broken."""
        if path not in self._files:
            self._files[path] = read_baselines(path)
        entry = self._files[path].get(key)
        if entry is not None:
            check_entry(path, key, entry)
        return entry

    def put(self, path: Path, key: str, record: dict[str, Any]) -> None:
        self._updates.setdefault(path, {})[key] = record

    def write(self) -> None:
        for path, updates in self._updates.items():
            try:
                check_writable(path)
            except BaselineFileError as e:
                self.errors.append(str(e))
                continue
            try:
                entries = read_baselines(path)
            except BaselineFileError:
                entries = {}  # a broken file is replaced by the entries recorded now
            entries.update(updates)
            try:
                write_atomically(path, json.dumps(dict(sorted(entries.items())), indent=2) + "\n")
            except OSError as e:
                self.errors.append(f"cannot record cycle baselines in {path}: "
                                   f"{e.strerror or e}")
                continue
            self._files[path] = entries
            self.written[path] = len(updates)


def read_baselines(path: Path) -> dict[str, Any]:
    """The entries of a baselines file ({} when it does not exist)."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BaselineFileError(f"cannot read cycle baselines {path}: {e}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(("<<<<<<<", ">>>>>>>", "=======")):
            raise BaselineFileError(
                f"{path}:{number}: git merge conflict markers in the cycle baselines; resolve "
                f"the conflict, or re-record the file with pytest {UPDATE_OPTION}")
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as e:
        raise BaselineFileError(f"{path}:{e.lineno}: cycle baselines are not valid JSON ({e.msg});"
                                f" re-record them with pytest {UPDATE_OPTION}") from None
    if not isinstance(entries, dict):
        raise BaselineFileError(f"{path}: expected a JSON object of baseline entries, found a "
                                f"{type(entries).__name__}; re-record with pytest {UPDATE_OPTION}")
    return entries


def check_entry(path: Path, key: str, entry: Any) -> None:
    """BaselineFileError unless ``entry`` is a baseline record with a numeric latency."""
    latency = entry.get("latency_ns") if isinstance(entry, dict) else None
    if not _number(latency):
        found = (f"latency_ns {latency!r}" if isinstance(entry, dict)
                 else f"a {type(entry).__name__}")
        raise BaselineFileError(f"{path}: entry {key!r}: expected an object with a numeric "
                                f"latency_ns, found {found}; re-record it with pytest "
                                f"{UPDATE_OPTION}")
    if not (math.isfinite(latency) and latency > 0):  # 1e999 is inf: every check would pass
        raise BaselineFileError(f"{path}: entry {key!r}: corrupt baseline; expected a finite "
                                f"latency_ns > 0, found {latency!r}; re-record it with pytest "
                                f"{UPDATE_OPTION}")
    busy = entry.get("busy_ns", {})
    if not isinstance(busy, dict) or not all(_number(v) and math.isfinite(v) and v >= 0
                                             for v in busy.values()):
        raise BaselineFileError(f"{path}: entry {key!r}: expected busy_ns to map engines to "
                                f"numbers, found {busy!r}; re-record it with pytest "
                                f"{UPDATE_OPTION}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_writable(path: Path) -> None:
    """BaselineFileError unless ``path`` can be replaced by a baselines file: it is a regular
    file or absent, in a folder that exists and can be written."""
    if path.exists() and not path.is_file():
        raise BaselineFileError(f"cannot record cycle baselines: {path} is not a file (a "
                                "directory?); move it away, then run pytest "
                                f"{UPDATE_OPTION} again")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise BaselineFileError(f"cannot record cycle baselines in {path}: its folder "
                                f"{path.parent} cannot be written")


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a reader (or a killed run) sees the old file or the
    new one, never a part."""
    from .report.launch_files import atomic_path

    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def record_of(res: SimResult) -> dict[str, Any]:
    """What a baseline stores about one launch (rounded so the file reads and diffs well)."""
    from .config import MODEL_VERSION

    s = res.summary()
    return {
        "latency_ns": round(s["latency_ns"], 1),
        "tensor_cycles": round(s["latency_tensor_cycles"]),
        "busy_ns": {row: round(ns, 1) for row, ns in s["busy_ns"].items() if ns > 0},
        "model": MODEL_VERSION,
        "config": res.config.fingerprint(),
    }


def _percent(new: float, old: float) -> str:
    return f"{100.0 * (new - old) / old:+.2f}%" if old else "new"


def compare(key: str, path: Path, old: dict[str, Any], new: dict[str, Any],
            rel: float) -> str | None:
    """None when ``new`` is within ``rel`` of ``old``, else the failure message."""
    before, after = old["latency_ns"], new["latency_ns"]
    if abs(after - before) <= rel * abs(before):
        return None
    word = "slower" if after > before else "faster"
    changed = [f"{what} changed from {old.get(field, 'an unrecorded one')} to {new[field]}"
               for field, what in (("model", "the simulator's timing model"),
                                   ("config", "the hardware config (fingerprint)"))
               if field in new and old.get(field) != new[field]]
    if changed:
        return (f"estimated latency of {key} is {_percent(after, before)} against its cycle "
                f"baseline in {path}, but {' and '.join(changed)} since it was recorded: this "
                f"is a change of the estimate, not (necessarily) of the kernel. Check the "
                f"kernel did not change too, then re-record: pytest {UPDATE_OPTION}")
    rows = sorted(set(old.get("busy_ns", {})) | set(new["busy_ns"]))
    moves = sorted(((new["busy_ns"].get(r, 0.0) - old.get("busy_ns", {}).get(r, 0.0), r)
                    for r in rows), key=lambda m: (-abs(m[0]), m[1]))
    lines = [
        f"estimated latency of {key} is {_percent(after, before)} ({word}) against its cycle "
        f"baseline in {path} (tolerance {100 * rel:.2f}%)",
        f"  baseline: {before:.1f} ns = {old.get('tensor_cycles', '?')} TensorE cycles",
        f"  now:      {after:.1f} ns = {new['tensor_cycles']} TensorE cycles",
        "  engines whose busy time changed most:",
    ]
    for delta, row in moves[:ENGINES_SHOWN]:
        was, now = old.get("busy_ns", {}).get(row, 0.0), new["busy_ns"].get(row, 0.0)
        lines.append(f"    {row:<10} {was:>12.1f} ns -> {now:>12.1f} ns  "
                     f"({_percent(now, was)}, {delta:+.1f} ns)")
    lines.append(f"  if the change is intended, record it: pytest {UPDATE_OPTION}")
    return "\n".join(lines)


def _tolerance(request: pytest.FixtureRequest, rel: float | None) -> float:
    if rel is None:
        marker = request.node.get_closest_marker("cycle_baseline")
        rel = marker.kwargs.get("rel") if marker is not None else None
    if rel is None:
        rel = request.config.getini("cycle_baseline_rel")
    try:
        value = float(rel)
    except (TypeError, ValueError):
        value = float("nan")
    if not value >= 0:  # also refuses NaN
        raise ValueError(f"cycle_baseline: expected a relative tolerance >= 0 (0.02 = 2%), "
                         f"found {rel!r}")
    return value


@pytest.fixture
def cycle_baseline(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``check(result, *, name=None, rel=None)``: compare a :class:`SimResult`'s estimated
    latency with the stored baseline of this test (``name`` tells several checks in one test
    apart); with ``--update-cycle-baselines``, record it instead."""
    store = request.config.stash[_STORE]
    test_file = Path(str(request.node.path))
    path = store.path_for(test_file)
    base_key = f"{test_file.name}::{request.node.nodeid.split('::', 1)[-1]}"
    update = request.config.getoption(UPDATE_OPTION)
    used: set[str] = set()

    def check(result: SimResult, *, name: str | None = None, rel: float | None = None) -> None:
        from .result import SimResult

        if not isinstance(result, SimResult):
            raise TypeError(f"cycle_baseline: expected the SimResult of ncs.simulate(...), "
                            f"found {type(result).__name__}")
        key = base_key if name is None else f"{base_key}::{name}"
        if key in used:
            raise ValueError(f"cycle_baseline: {key} is checked twice in one test; give each "
                             f"check its own name=")
        used.add(key)
        tolerance = _tolerance(request, rel)
        new = record_of(result)
        if update:
            try:  # refused now, in the test, rather than after the whole session
                check_writable(path)
            except BaselineFileError as e:
                pytest.fail(str(e), pytrace=False)
            store.put(path, key, new)
            return
        try:
            old = store.get(path, key)
        except BaselineFileError as e:
            pytest.fail(str(e), pytrace=False)
        if old is None:
            pytest.fail(f"no cycle baseline for {key} in {path}; record it with: "
                        f"pytest {UPDATE_OPTION} '{request.node.nodeid}'", pytrace=False)
        message = compare(key, path, old, new, tolerance)
        if message is not None:
            pytest.fail(message, pytrace=False)

    return check
