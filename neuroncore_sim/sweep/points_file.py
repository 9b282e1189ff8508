"""``points.jsonl``: the finished points of a sweep, one JSON line each, read back to resume.

A line that cannot be a saved point (cut short by an interruption, bytes that are not UTF-8, not
a JSON object, a key that is not a string, a measured column of the wrong type) is damaged: it
is skipped, and one :class:`DamagedPointsWarning` counts them, so the point it held runs again
(nothing is lost, and nothing that was saved whole runs twice). Writing a line that fails (a
full disk, a file made read-only) is a :class:`~neuroncore_sim.report.launch_files.
OutputWriteError` naming the file, raised at once: the points saved before it stay.
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from ..errors import is_package_frame
from ..report.launch_files import OutputWriteError
from .table import RESULT_COLUMNS, TEXT_COLUMNS


class DamagedPointsWarning(UserWarning):
    """Lines of ``points.jsonl`` that cannot be read back were skipped (their points run
    again)."""


def read_points(path: Path, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """Rows already saved in ``path`` for the wanted keys (the last line of a key wins); damaged
    lines are skipped with one warning that counts them."""
    found: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return found
    try:
        data = path.read_bytes()
    except OSError as e:
        raise OutputWriteError(f"cannot read {path}: {e.strerror or e}") from None
    damaged = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        record = _record(raw)
        if record is None:
            damaged += 1
        elif record["key"] in wanted:
            found[record["key"]] = {c: record.get(c) for c in RESULT_COLUMNS}
    if damaged:
        warnings.warn(DamagedPointsWarning(
            f"{path}: {damaged} damaged line{'s' if damaged != 1 else ''} skipped (cut short, "
            "not UTF-8 or not a saved point); the points they held run again"),
            stacklevel=_outside_package())
    return found


def _outside_package() -> int:
    """The ``stacklevel`` of the innermost caller outside this package (as seen from the
    function that calls this one's caller)."""
    frame, level = sys._getframe(2), 2
    while frame.f_back is not None and is_package_frame(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def _record(raw: bytes) -> dict[str, Any] | None:
    """The saved point on one line, or None when the line is damaged."""
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        return None
    for column in RESULT_COLUMNS:
        value = record.get(column)
        if value is None:
            continue
        if column in TEXT_COLUMNS:
            ok = isinstance(value, str)
        elif column == "match":
            ok = isinstance(value, bool)
        else:  # a measured number is finite (NaN or 1e999 would rank first or last)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (
                column == "max_abs_err" or math.isfinite(value))
        if not ok:
            return None
    return record


def check_appendable(path: Path) -> None:
    """OutputWriteError unless ``path`` (if it exists) can be opened to append to: checked
    before any point runs."""
    if not path.exists():
        return
    try:
        with path.open("ab"):
            pass
    except OSError as e:
        raise OutputWriteError(f"cannot write {path}: {e.strerror or e}; the sweep saves its "
                               "finished points there") from None


class PointsWriter:
    """Appends one JSON line per finished point to ``points.jsonl``, on disk at once (fsync). A
    line that cannot be written whole is cut off again, so the file keeps whole lines only."""

    def __init__(self, out: Path | None, target: str, config_name: str) -> None:
        self.target, self.config_name, self.fd = target, config_name, -1
        self.path = out / "points.jsonl" if out is not None else None

    def __enter__(self) -> "PointsWriter":
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
                size = os.fstat(self.fd).st_size
                if size and not _ends_with_newline(self.path):  # a line cut short: start anew
                    self._write(b"\n", size)
            except OSError as e:
                raise OutputWriteError(f"cannot write {self.path}: {e.strerror or e}") from None
        return self

    def __call__(self, key: str, point: dict[str, Any], row: dict[str, Any]) -> None:
        if self.fd < 0:
            return
        record = {"key": key, "target": self.target, "config": self.config_name,
                  "params": point, **row}
        try:
            self._write((json.dumps(record) + "\n").encode(), os.fstat(self.fd).st_size)
        except OSError as e:
            raise OutputWriteError(
                f"cannot write {self.path}: {e.strerror or e}; the points saved before this one "
                "are kept: free space (or fix the file) and run the same sweep again to "
                "resume") from None

    def _write(self, data: bytes, size: int) -> None:
        """Append ``data`` whole to the file of ``size`` bytes, or leave it as it was."""
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
            os.fsync(self.fd)
        except BaseException:
            os.ftruncate(self.fd, size)  # no part of a line stays (Ctrl-C included)
            raise

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"
