"""Results files: one CSV row per (case, metric), from the hardware runner or the simulator.

Columns (:data:`COLUMNS`): ``case`` (a suite case id), ``metric`` (``latency_ns``,
``duration_ns:OPCODE`` or ``gap_ns:OPCODE``), ``value_ns``, ``suite`` (the suite version the
kernels came from), ``toolchain`` (neuronx-cc's version, or the simulator's model version),
``compile_options`` (the neuronx-cc flags the case was built with) and ``source`` (free text:
instance type, a document reference). Rows repeating a (case, metric) are averaged.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from ..errors import SimulatorError

COLUMNS = ("case", "metric", "value_ns", "suite", "toolchain", "compile_options", "source")


class CalibrationError(SimulatorError):
    """A calibration input is wrong: a results file, a suite folder, a parameter name."""


def write_rows(path: Path, rows: list[dict[str, object]]) -> None:
    """Write ``rows`` (dicts keyed by :data:`COLUMNS`) as a results CSV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for row in rows:
            w.writerow({k: row.get(k, "") for k in COLUMNS})


def read_results(path: Path) -> list[dict[str, str]]:
    """The rows of a results CSV, checked.

    Raises:
        CalibrationError: unreadable file, missing columns, an empty file or a value that is
            not a positive number (naming the line).
    """
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("case", "metric", "value_ns") if c not in
                       (reader.fieldnames or [])]
            if missing:
                raise CalibrationError(f"{path}: expected a results CSV with columns "
                                       f"{', '.join(COLUMNS)}; missing {', '.join(missing)}")
            rows = list(reader)
    except OSError as e:
        raise CalibrationError(f"{path}: cannot read: {e.strerror or e}") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise CalibrationError(f"{path}: expected a UTF-8 CSV file, found: {e}") from None
    if not rows:
        raise CalibrationError(f"{path}: expected at least one result row, found none")
    for line, row in enumerate(rows, 2):
        try:
            value = float(row["value_ns"] or "nan")
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise CalibrationError(f"{path}:{line}: value_ns must be a positive number of ns, "
                                   f"found {row['value_ns']!r}")
    return rows


def averaged(rows: list[dict[str, str]]) -> dict[tuple[str, str], float]:
    """(case, metric) -> the mean of its rows' values (repeated runs of one case)."""
    sums: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        sums.setdefault((row["case"], row["metric"]), []).append(float(row["value_ns"]))
    return {k: sum(v) / len(v) for k, v in sums.items()}
