"""The distinct launches of a ``neuroncore-sim run``: identical launches grouped, with their
count, as the final table on the terminal and ``index.md`` under ``--out``.

Launches are identical when their :attr:`~neuroncore_sim.result.SimResult.launch_key` is equal
(:mod:`neuroncore_sim.launches`: same kernel, argument shapes and dtypes, constants, grid and
config); they share one timing, one report and one ``--out`` folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..frameworks.profile import LaunchRecord, ProfileSession
from ..report.launch_files import launch_folder

#: The index of the launch folders ``run --out`` writes.
INDEX_FILE = "index.md"


@dataclass
class DistinctLaunch:
    """One distinct launch and every launch of the run identical to it.

    Attributes:
        number: 1, 2, ... in order of first launch (its ``launch<number>_<kernel>`` folder).
        records: the launches, in run order (the first one's result is reported).
        positions: their 1-based numbers among all launches of the run.
    """

    number: int
    records: list[LaunchRecord] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)

    @property
    def first(self) -> LaunchRecord:
        return self.records[0]

    @property
    def count(self) -> int:
        return len(self.records)

    def folder(self, out: Path) -> Path:
        """Its folder under ``out``."""
        return launch_folder(out, self.number, self.first.result.program.name)

    def heading(self) -> str:
        """``add_one (nki.jit)``, with ``: 121 identical launches (1-121)`` when repeated."""
        res = self.first.result
        text = f"{res.program.name} ({res.entry})"
        if self.count > 1:
            text += f": {self.count} identical launches ({spans(self.positions)})"
        return text


def distinct_launches(session: ProfileSession) -> list[DistinctLaunch]:
    """The session's launches grouped by launch key, in order of first launch (a launch
    without a key is its own group)."""
    groups: dict[Any, DistinctLaunch] = {}
    for position, record in enumerate(session.launches, 1):
        key = record.result.launch_key
        key = key if key is not None else ("unkeyed", position)
        group = groups.get(key)
        if group is None:
            group = groups[key] = DistinctLaunch(len(groups) + 1)
        group.records.append(record)
        group.positions.append(position)
    return list(groups.values())


def spans(numbers: list[int]) -> str:
    """``[1, 2, 3, 5, 7, 8]`` -> ``"1-3, 5, 7-8"``."""
    out: list[str] = []
    start = prev = numbers[0]
    for n in numbers[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


def _rows(distinct: list[DistinctLaunch], out: Path | None) -> list[list[str]]:
    header = ["#", "kernel", "entry", "count", "launches", "device us", "total us", "layer",
              "shapes"] + (["folder"] if out is not None else [])
    rows = [header]
    for d in distinct:
        rec = d.first
        layers = list(dict.fromkeys(r.layer for r in d.records))
        rows.append([str(d.number), rec.kernel, rec.result.entry, str(d.count), spans(d.positions),
                     f"{rec.device_ns / 1e3:.2f}", f"{rec.device_ns * d.count / 1e3:.2f}",
                     ", ".join(layers[:3]) + (f" (+{len(layers) - 3})" if len(layers) > 3 else ""),
                     " ".join("x".join(map(str, s)) for s in rec.shapes)]
                    + ([d.folder(out).name + "/"] if out is not None else []))
    return rows


def launch_table(distinct: list[DistinctLaunch], out: Path | None = None) -> str:
    """The distinct launches as aligned text: number, kernel, entry point, count, which
    launches, device time of one and of all, layer, input shapes (and folder, with ``out``)."""
    rows = _rows(distinct, out)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {0, 3, 5, 6}
    return "\n".join("  ".join((c.rjust(w) if i in right else c.ljust(w))
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in rows)


def index_markdown(distinct: list[DistinctLaunch], out: Path, script: str, launches: int) -> str:
    """``index.md``: which folder holds which launches, as a Markdown table."""
    rows = _rows(distinct, out)
    rows[1:] = [r[:-1] + [f"[{r[-1]}]({r[-1]})"] for r in rows[1:]]
    lines = [f"# Kernel launches of {script}", "",
             f"{launches} launches, {len(distinct)} distinct; identical launches (same kernel, "
             "argument shapes and dtypes, constants, grid and config) share one timing and "
             "one folder.", "",
             "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows[1:]]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """A Markdown table cell: "|" escaped, and "<module>" kept from reading as an HTML tag."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
