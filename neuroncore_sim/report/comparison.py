"""Two launches side by side: what a kernel developer reads before and after an optimisation.

:func:`compare` takes two timed launches (two kernels, or one kernel under two configs or
compile options) and returns a :class:`Comparison`: the latency of each and the change in %,
per-engine busy time, the bottleneck and bounds of each, and the kernel source lines whose
engine time changed most. :meth:`Comparison.text` renders it for a terminal (what
``neuroncore-sim compare`` prints), :meth:`Comparison.to_dict` for JSON, and
:func:`neuroncore_sim.report.plot.comparison_timeline` draws both timelines stacked on one
time axis.

Source lines are matched by their ``file.py:LINE`` when both launches ran that line (the same
kernel under two configs); lines left over are matched by their code text, in file order (two
versions of a kernel whose lines moved). A line only one launch ran is shown against 0.

Nothing here feeds back into the simulation.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SimulatorError, expected
from ..result import SimResult
from ..timing.events import MAIN_ENGINES
from .tables import source_table

if TYPE_CHECKING:
    import pandas as pd

#: Bounds and rates of each launch shown side by side (fields of ``SimResult.summary()``).
BOUNDS = ("roofline_ns", "memory_bound", "compute_bound", "perfect_pipeline",
          "mfu_percent", "dma_queue_busy_percent", "dma_bandwidth_percent_of_peak")
#: Engine rows compared (``summary()["busy_ns"]``; "dma" is the mean over the DMA engines).
ENGINE_ROWS = MAIN_ENGINES + ("dma",)


class ComparisonError(SimulatorError):
    """A launch given to :func:`compare` cannot be compared (it was not timed)."""


@dataclass(frozen=True)
class Comparison:
    """Launch A against launch B (B is usually the changed one).

    Attributes:
        labels: what A and B are (kernel and config, or the command line's targets).
        latency_ns: estimated latency of A and of B.
        bottleneck: ``summary()["bottleneck"]`` of A and of B.
        roofline_limit: which roofline term bounds A and B.
        pipeline_bottleneck: the engine of Neuron Explorer's ``perfect_pipeline`` bound.
        engines: per engine row: ``busy_ns_a``, ``busy_ns_b``, ``change_ns`` (B - A),
            ``busy_percent_a``, ``busy_percent_b`` (of each launch's own latency). The "dma"
            row is the mean over the DMA engines (``summary()["busy_ns"]["dma"]``).
        bounds: per field of :data:`BOUNDS`: ``a``, ``b``, ``change`` (B - A).
        lines: one row per matched source line: ``source_a``, ``source_b`` ("" where the line
            ran in one launch only), ``code``, ``busy_ns_a``, ``busy_ns_b``, ``change_ns``;
            engine time summed over rows as in :func:`~.tables.source_table` (a DMA spread
            over 16 queues counts each queue's share); largest change (either way) first.
    """

    labels: tuple[str, str]
    latency_ns: tuple[float, float]
    bottleneck: tuple[str, str]
    roofline_limit: tuple[str, str]
    pipeline_bottleneck: tuple[str, str]
    engines: "pd.DataFrame"
    bounds: "pd.DataFrame"
    lines: "pd.DataFrame"

    @property
    def change_percent(self) -> float:
        """Latency change from A to B in % of A (negative: B is faster)."""
        a, b = self.latency_ns
        return 100.0 * (b - a) / a if a > 0 else 0.0

    @property
    def speedup(self) -> float:
        """A's latency over B's (above 1: B is faster)."""
        a, b = self.latency_ns
        return a / b if b > 0 else float("inf")

    def to_dict(self, top_lines: int | None = 10) -> dict[str, Any]:
        """JSON-ready content: labels, latencies, change, bottlenecks, engine and bound tables
        (records), and the ``top_lines`` lines that changed most (None: all)."""
        lines = self.lines if top_lines is None else self.lines.head(top_lines)
        return {
            "a": self.labels[0], "b": self.labels[1],
            "latency_ns": {"a": self.latency_ns[0], "b": self.latency_ns[1]},
            "change_percent": self.change_percent, "speedup": self.speedup,
            "bottleneck": dict(zip("ab", self.bottleneck)),
            "roofline_limit": dict(zip("ab", self.roofline_limit)),
            "pipeline_bottleneck": dict(zip("ab", self.pipeline_bottleneck)),
            "engines": {row: {k: float(v) for k, v in r.items()}
                        for row, r in self.engines.to_dict("index").items()},
            "bounds": {name: {k: float(v) for k, v in r.items()}
                       for name, r in self.bounds.to_dict("index").items()},
            "lines": [{k: (float(v) if k.endswith("_ns") else v) for k, v in r.items()}
                      for r in lines.to_dict("records")],
        }

    def text(self, top_lines: int = 5) -> str:
        """A readable rendering: latency and change, bottlenecks, per-engine busy time,
        bounds, and the ``top_lines`` source lines whose time changed most."""
        import pandas as pd

        a, b = self.latency_ns
        change = self.change_percent
        verdict = ("no change" if a == b else
                   f"B is {self.speedup:.2f}x faster" if b < a else
                   f"B is {1 / self.speedup:.2f}x slower")
        out = [f"A          : {self.labels[0]}",
               f"B          : {self.labels[1]}",
               f"latency    : A {a:,.0f} ns, B {b:,.0f} ns: {change:+.1f}% ({verdict})",
               f"bottleneck : A {self.bottleneck[0]}, B {self.bottleneck[1]}; roofline limit "
               f"A {self.roofline_limit[0]}, B {self.roofline_limit[1]}; perfect pipeline "
               f"A {self.pipeline_bottleneck[0]}, B {self.pipeline_bottleneck[1]}",
               "",
               "engine busy time (ns; % of each launch's latency; dma = mean of the DMA "
               "queues):"]
        engines = self.engines.copy()
        with pd.option_context("display.width", 160, "display.max_columns", 20):
            out.append(engines.to_string(float_format=lambda v: f"{v:,.1f}"))
            out += ["", "bounds and rates (ns, or % where named):",
                    self.bounds.to_string(float_format=lambda v: f"{v:,.1f}")]
            shown = self.lines.head(top_lines)
            out += ["", f"source lines whose engine time changed most (ns, summed over "
                        f"engines; top {len(shown)} of {len(self.lines)}):"]
            if len(shown):
                out.append(shown.to_string(index=False, float_format=lambda v: f"{v:,.0f}",
                                           max_colwidth=48))
            else:
                out.append("(no source lines)")
        return "\n".join(out) + "\n"

    def __str__(self) -> str:
        return self.text()


def compare(res_a: SimResult, res_b: SimResult,
            labels: tuple[str, str] | None = None) -> Comparison:
    """Compare two timed launches (A: before, B: after).

    Args:
        res_a, res_b: results of :func:`neuroncore_sim.simulate` (with timing).
        labels: names for A and B; default: kernel name and config of each.

    Raises:
        ComparisonError: a launch was not timed.
    """
    import pandas as pd

    for side, res in (("A", res_a), ("B", res_b)):
        if res.timing is None:
            raise ComparisonError(expected(f"compare: launch {side} ({res.program.name})",
                                           "a timed launch", "a launch without timing"))
    if labels is None:
        labels = (f"{res_a.program.name} ({res_a.config.name})",
                  f"{res_b.program.name} ({res_b.config.name})")
    sa, sb = res_a.summary(), res_b.summary()
    engines = pd.DataFrame({
        "busy_ns_a": [sa["busy_ns"].get(r, 0.0) for r in ENGINE_ROWS],
        "busy_ns_b": [sb["busy_ns"].get(r, 0.0) for r in ENGINE_ROWS],
        "busy_percent_a": [sa["busy_percent"].get(r, 0.0) for r in ENGINE_ROWS],
        "busy_percent_b": [sb["busy_percent"].get(r, 0.0) for r in ENGINE_ROWS]},
        index=pd.Index(ENGINE_ROWS, name="engine"))
    engines.insert(2, "change_ns", engines["busy_ns_b"] - engines["busy_ns_a"])
    bounds = pd.DataFrame({"a": [float(sa[n]) for n in BOUNDS],
                           "b": [float(sb[n]) for n in BOUNDS]},
                          index=pd.Index(BOUNDS, name="field"))
    bounds["change"] = bounds["b"] - bounds["a"]
    return Comparison(
        labels=(str(labels[0]), str(labels[1])),
        latency_ns=(sa["latency_ns"], sb["latency_ns"]),
        bottleneck=(sa["bottleneck"], sb["bottleneck"]),
        roofline_limit=(sa["roofline_limit"], sb["roofline_limit"]),
        pipeline_bottleneck=(sa["pipeline_bottleneck"], sb["pipeline_bottleneck"]),
        engines=engines, bounds=bounds, lines=_line_changes(res_a, res_b))


def _lines(result: SimResult) -> list[tuple[str, str, float]]:
    """(``file.py:LINE``, code text, engine time) of each source line the launch ran."""
    paths: dict[str, Any] = {}
    for ins in result.program.instructions:
        if ins.loc is not None:
            paths.setdefault(str(ins.loc), ins.loc)
    rows = []
    for source, busy in source_table(result)["busy_ns"].items():
        loc = paths.get(source)
        code = linecache.getline(loc.filename, loc.lineno).strip() if loc is not None else ""
        rows.append((str(source), code, float(busy)))
    return rows


def _line_changes(res_a: SimResult, res_b: SimResult) -> "pd.DataFrame":
    """Match A's lines with B's (same ``file.py:LINE`` first, then same code text in file
    order) and tabulate the change of each, largest first."""
    import pandas as pd

    a_rows, b_rows = _lines(res_a), _lines(res_b)
    b_by_source = {src: (code, busy) for src, code, busy in b_rows}
    matched: list[tuple[str, str, str, float, float]] = []
    left_a = []
    for src, code, busy in a_rows:
        if src in b_by_source:
            matched.append((src, src, code, busy, b_by_source.pop(src)[1]))
        else:
            left_a.append((src, code, busy))
    left_b = [(src, code, busy) for src, code, busy in b_rows if src in b_by_source]
    by_code: dict[str, list[tuple[str, float]]] = {}
    for src, code, busy in sorted(left_b, key=lambda r: _line_number(r[0])):
        by_code.setdefault(code, []).append((src, busy))
    for src, code, busy in sorted(left_a, key=lambda r: _line_number(r[0])):
        candidates = by_code.get(code) if code else None
        if candidates:
            other, other_busy = candidates.pop(0)
            matched.append((src, other, code, busy, other_busy))
        else:
            matched.append((src, "", code, busy, 0.0))
    matched += [("", src, code, 0.0, busy) for code, rest in by_code.items()
                for src, busy in rest]
    table = pd.DataFrame(matched, columns=["source_a", "source_b", "code", "busy_ns_a",
                                           "busy_ns_b"])
    table["change_ns"] = table["busy_ns_b"] - table["busy_ns_a"]
    order = table["change_ns"].abs().sort_values(ascending=False, kind="stable").index
    return table.loc[order].reset_index(drop=True)


def _line_number(source: str) -> int:
    tail = source.rpartition(":")[2]
    return int(tail) if tail.isdigit() else 0
