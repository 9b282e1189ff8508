"""Timeline plot of a simulated launch: which engine did what, when, and how busy the core was.

:func:`timeline` draws one horizontal lane per compute engine (tensor, its LoadStationary stage
``tensor_ls`` when present, vector, scalar, gpsimd, sync when present) and a "dma" band made of one
thin sub-lane per DMA engine. Bars are coloured by opcode. A second panel below shows the
fraction of compute engines and of DMA engines busy over time, a third the SBUF and PSUM bytes
per partition in use (:mod:`neuroncore_sim.timing.memory_use`), each on its own axis.

Large launches (tens of thousands of events) stay fast and readable. A lane with few events is
drawn exactly (one bar per event; bars of one opcode closer than a pixel are merged). A lane with
more than one event per :data:`BIN_ABOVE_PIXELS_PER_EVENT` pixels is drawn binned: the time axis
is cut into pixel-wide bins, and in each bin the opcodes are stacked, each as tall as the share of
the bin it kept the lane busy. A lane busy a quarter of the time is then a quarter-height band,
not a solid bar of merged sub-pixel events. matplotlib is imported inside the functions (Agg
backend), so importing this module costs nothing and needs no display.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..timing import memory_use
from ..timing.critical_path import CriticalPath, critical_path
from ..timing.events import MAIN_ENGINES, Event, is_dma_row
from ..program.ir import MemSpace
from ..errors import SimulatorError, expected
from ..result import SimResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Compute rows in display order (top to bottom). tensor_ls and sync appear only when used.
LANES = ("tensor", "tensor_ls", "vector", "scalar", "gpsimd", "sync")
#: Rows counted as "compute engines" in the utilisation panel. tensor_ls is left out: it runs
#: in the background of the tensor row, so counting both would count TensorE twice.
_FIG_WIDTH_IN = 12.0
_DPI = 100
_UTIL_BINS = 400
#: Height of the DMA band in lanes: tall enough for each of the 16 queues' labels.
_DMA_BAND_HEIGHT = 3.2
_QUEUE_FONT_PT = 5
_QUEUE_LABEL_PAD_PT = 22  # lane names sit left of the queue labels
_LANE_BINS = int(_FIG_WIDTH_IN * _DPI)  # about one bin per pixel of the lanes' width
#: A lane with more events than ``_LANE_BINS / BIN_ABOVE_PIXELS_PER_EVENT`` is drawn binned.
BIN_ABOVE_PIXELS_PER_EVENT = 8
_ACTIVE_TINT = "0.88"


def merge_intervals(starts: np.ndarray, ends: np.ndarray, gap: float) -> list[tuple[float, float]]:
    """Sorted (start, width) spans covering the intervals, joining those less than ``gap`` apart.

    Args:
        starts, ends: interval bounds (any order).
        gap: intervals separated by less than this are drawn as one bar (about one pixel).
    """
    if len(starts) == 0:
        return []
    order = np.argsort(starts, kind="stable")
    out: list[list[float]] = []
    for s, e in zip(starts[order].tolist(), ends[order].tolist()):
        if out and s - out[-1][1] < gap:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e - s) for s, e in out]


def occupancy(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Summed busy time of the intervals in each bin between consecutive ``edges``, over the
    bin width (1.0 = one interval running the whole bin).

    Computed exactly from the sorted start/end points (the integral of the number of running
    intervals), not by sampling.
    """
    if len(starts) == 0:
        return np.zeros(len(edges) - 1)
    t = np.concatenate([starts, ends])
    step = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    order = np.argsort(t, kind="stable")
    t, step = t[order], step[order]
    running = np.cumsum(step)  # intervals running just after each point
    integral = np.concatenate([[0.0], np.cumsum(running[:-1] * np.diff(t))])
    cum = np.interp(edges, t, integral, left=0.0, right=integral[-1])
    return np.diff(cum) / np.diff(edges)


def busy_fraction(events: list[Event], rows: set[str], n_engines: int, edges: np.ndarray
                  ) -> np.ndarray:
    """Average fraction of ``n_engines`` busy in each bin between consecutive ``edges`` (ns).

    Each row is busy at most once at a time, so this is :func:`occupancy` of the rows' events
    over the number of engines.
    """
    sel = [e for e in events if e.engine in rows]
    if not sel or n_engines <= 0:
        return np.zeros(len(edges) - 1)
    return occupancy(np.array([e.start_ns for e in sel]), np.array([e.end_ns for e in sel]),
                     edges) / n_engines


def _lanes(events: list[Event]) -> tuple[list[str], list[str]]:
    rows = {e.engine for e in events}
    compute = [r for r in LANES if r in rows or r in MAIN_ENGINES]
    compute += sorted(r for r in rows if r not in LANES and not is_dma_row(r))
    dma = sorted((r for r in rows if is_dma_row(r)), key=lambda r: int(r[3:]))
    return compute, dma


#: Legend entry of the DMA transfers of lines outside the heaviest ones.
OTHER_DMA = "dma: other lines"
#: How many DMA source lines get a colour of their own in the timeline.
DMA_LINES_SHOWN = 8


def dma_labels(result: SimResult) -> dict[str, str]:
    """Source line -> legend label ("dma: k.py:31 lhsT") of the heaviest DMA lines (by summed
    transfer time), at most :data:`DMA_LINES_SHOWN`."""
    from .tables import dma_line_table

    table = dma_line_table(result).head(DMA_LINES_SHOWN)
    return {src: f"dma: {src or '?'} {row.tensors}" for src, row in table.iterrows()}


def _dma_colours(keys: list[str]) -> dict[str, Any]:
    import matplotlib

    palette = list(matplotlib.colormaps["Set2"].colors) + list(
        matplotlib.colormaps["Pastel1"].colors)
    return {k: ("0.65" if k == OTHER_DMA else palette[i % len(palette)])
            for i, k in enumerate(keys)}


def _colours(opcodes: list[str]) -> dict[str, Any]:
    import matplotlib

    # tab10 first: its colours are all distinct; tab20's paired shades only beyond ten opcodes.
    palette = list(matplotlib.colormaps["tab10"].colors) + list(
        matplotlib.colormaps["tab20"].colors[1::2])
    return {op: palette[i % len(palette)] for i, op in enumerate(opcodes)}


def _draw_lanes(ax: "Axes", events: list[Event], span: tuple[float, float], n_dma: int,
                path: CriticalPath | None = None,
                dma_labels: dict[str, str] | None = None,
                colour_order: list[str] | None = None) -> None:
    compute, dma = _lanes(events)
    n_dma = max(n_dma, len(dma))
    t0, t1 = span
    px_ns = max(t1 - t0, 1.0) / (_FIG_WIDTH_IN * _DPI)
    # y position (bottom) and height of every row; lanes go top to bottom.
    y: dict[str, tuple[float, float]] = {}
    top = len(compute) + _DMA_BAND_HEIGHT
    for i, row in enumerate(compute):
        y[row] = (top - i - 0.9, 0.8)
    sub = _DMA_BAND_HEIGHT / max(n_dma, 1)
    for row in dma:
        y[row] = (_DMA_BAND_HEIGHT - (int(row[3:]) + 1) * sub, sub * 0.85)
    # Compute lanes are coloured by opcode; DMA lanes by what they move (the source line and
    # tensor of the load or store: dma_labels), so one can tell the transfers apart.
    dma_labels = dma_labels or {}

    def key(e: Event) -> str:
        if is_dma_row(e.engine) and dma_labels:
            return dma_labels.get(e.source, OTHER_DMA)
        return e.opcode

    opcodes = sorted({key(e) for e in events if not is_dma_row(e.engine) or not dma_labels})
    dma_keys = list(dict.fromkeys(list(dma_labels.values()) + [OTHER_DMA]))
    dma_keys = [k for k in dma_keys if any(is_dma_row(e.engine) and key(e) == k
                                           for e in events)]
    colours = _colours(list(dict.fromkeys((colour_order or []) + opcodes)))
    colours.update(_dma_colours(dma_keys))
    groups: dict[tuple[str, str], list[Event]] = {}
    for e in events:
        groups.setdefault((e.engine, key(e)), []).append(e)
    order = opcodes + dma_keys
    counts: dict[str, int] = {}
    for (row, _), evs in groups.items():
        counts[row] = counts.get(row, 0) + len(evs)
    binned = {r for r, n in counts.items() if n * BIN_ABOVE_PIXELS_PER_EVENT > _LANE_BINS}
    edges = np.linspace(t0, max(t1, t0 + 1.0), _LANE_BINS + 1)
    stacked = {r: np.zeros(_LANE_BINS) for r in binned}
    for (row, op), evs in sorted(groups.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        starts = np.array([e.start_ns for e in evs])
        ends = np.array([e.end_ns for e in evs])
        if row in binned:
            bottom, height = y[row]
            occ = occupancy(starts, ends, edges)
            lo = bottom + stacked[row] * height
            hi = lo + occ * height
            stacked[row] += occ
            # step="post": bin i spans edges[i]..edges[i+1]; repeat the last value at the end.
            ax.fill_between(edges / 1000, np.append(lo, lo[-1]), np.append(hi, hi[-1]),
                            step="post", facecolor=colours[op], linewidth=0)
            continue
        spans = merge_intervals(starts / 1000, ends / 1000, px_ns / 1000)
        # A bar narrower than a pixel would vanish: draw it one pixel wide.
        spans = [(s, max(w, px_ns / 1000)) for s, w in spans]
        ax.broken_barh(spans, y[row], facecolors=colours[op], linewidth=0)
    for row in binned:  # where a binned lane did anything, a light band the lane's height
        bottom, height = y[row]
        active = np.append(stacked[row] > 0, False)
        ax.fill_between(edges / 1000, bottom, bottom + height, where=active, step="post",
                        facecolor=_ACTIVE_TINT, linewidth=0, zorder=0.5)
    if binned:
        ax.text(1.0, -0.02, "lanes with many events: bar height = share of each pixel busy "
                "(grey: active)",
                transform=ax.transAxes, ha="right", va="top", fontsize=7, color="0.4")
    ticks = [y[r][0] + y[r][1] / 2 for r in compute] + [_DMA_BAND_HEIGHT / 2]
    ax.set_yticks(ticks, list(compute) + [f"dma\n({n_dma} engines)"])
    # Each DMA queue named beside its sub-lane (minor ticks), the lane names further out.
    ax.set_yticks([_DMA_BAND_HEIGHT - (q + 0.5) * sub for q in range(n_dma)],
                  [f"dma{q}" for q in range(n_dma)], minor=True)
    ax.tick_params(axis="y", which="minor", labelsize=_QUEUE_FONT_PT, length=0, pad=1)
    ax.tick_params(axis="y", which="major", pad=_QUEUE_LABEL_PAD_PT)
    ax.set_ylim(0, top)
    ax.axhline(_DMA_BAND_HEIGHT, color="0.7", linewidth=0.5)
    handles = [_patch(colours[op], op) for op in order]
    if path is not None and path.steps:
        handles.append(_draw_critical_path(ax, path, y))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False, title="opcode / DMA line")


def _draw_critical_path(ax: "Axes", path: CriticalPath, y: dict[str, tuple[float, float]]
                        ) -> Any:
    """One red line through the critical path: along each of its events at the middle of the
    event's lane, and from one event's end to the next one's start (the waits); returns the
    line for the legend."""
    xs: list[float] = []
    ys: list[float] = []
    for step in path.steps:
        e = step.event
        bottom, height = y[e.engine]
        mid = bottom + height / 2
        xs += [e.start_ns / 1000, e.end_ns / 1000]
        ys += [mid, mid]
    (line,) = ax.plot(xs, ys, color="red", linewidth=0.9, alpha=0.85, zorder=3,
                      label="critical path")
    return line


def _patch(colour: Any, label: str) -> Any:
    from matplotlib.patches import Patch

    return Patch(facecolor=colour, label=label)


def _draw_utilisation(ax: "Axes", events: list[Event], span: tuple[float, float],
                      n_dma: int) -> None:
    edges = np.linspace(span[0], max(span[1], span[0] + 1.0), _UTIL_BINS + 1)
    mid_us = (edges[:-1] + edges[1:]) / 2 / 1000
    comp = busy_fraction(events, set(MAIN_ENGINES), len(MAIN_ENGINES), edges)
    dma_rows = {r for r in {e.engine for e in events} if is_dma_row(r)}
    dma = busy_fraction(events, dma_rows, n_dma, edges)
    ax.fill_between(mid_us, comp, step="mid", alpha=0.35, color="tab:blue")
    ax.step(mid_us, comp, where="mid", color="tab:blue", linewidth=0.8,
            label=f"compute engines ({len(MAIN_ENGINES)})")
    ax.step(mid_us, dma, where="mid", color="tab:orange", linewidth=0.8,
            label=f"DMA engines ({n_dma})")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("busy\nfraction")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def bin_max(times: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Maximum of a step function (``values[i]`` from ``times[i]`` on; ``times[0] <=
    edges[0]``) over each bin between consecutive ``edges``."""
    first = np.searchsorted(times, edges[:-1], side="right") - 1  # value at the bin's start
    stop = np.searchsorted(times, edges[1:], side="left")  # changes before the bin's end
    return np.array([values[a:max(b, a + 1)].max() for a, b in zip(first, stop)])


def _draw_memory(ax: "Axes", result: SimResult, span: tuple[float, float]) -> None:
    """SBUF (left axis) and PSUM (right axis) KiB per partition in use over time, each scaled
    to its own peak so a small footprint still shows its shape; the legend gives the peaks
    against the capacities."""
    assert result.timing is not None  # timeline() checked it
    lives = memory_use.tile_lives(result.program, result.timing, result.config)
    end_ns = max(result.timing.latency_ns, 1.0)
    t0, t1 = span
    handles = []
    for axis, space, colour in ((ax, MemSpace.SBUF, "tab:green"),
                                (ax.twinx(), MemSpace.PSUM, "tab:purple")):
        t, used = memory_use.usage_series(lives, space)
        cap = memory_use.capacity(space, result.config)
        peak = int(used.max())
        last = end_ns
        in_span = int(np.searchsorted(t, t1) - np.searchsorted(t, t0))
        if in_span > _LANE_BINS:  # more changes than pixels: draw each pixel's maximum
            t, last = np.linspace(t0, t1, _LANE_BINS + 1)[:-1], t1
            used = bin_max(*memory_use.usage_series(lives, space), np.append(t, t1))
        (line,) = axis.step(np.append(t, last) / 1000, np.append(used, used[-1]) / 1024,
                            where="post", color=colour, linewidth=0.9,
                            label=f"{space.value.upper()} (peak {peak:,} of {cap:,} "
                                  f"B/partition, {100.0 * peak / cap:.1f}%)")
        axis.set_ylim(0, max(peak, 1024) * 1.15 / 1024)  # at least 1 KiB: an unused space
        axis.set_ylabel(f"{space.value.upper()}\nKiB/partition", color=colour, fontsize=8)
        axis.tick_params(axis="y", labelsize=7, colors=colour)
        handles.append(line)
    ax.set_xlabel("time (µs)")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.09, 1.0), fontsize=8,
              frameon=False)


def lane_count(result: SimResult) -> float:
    """Height of :func:`timeline`'s lanes panel in lane units (compute lanes plus the DMA band),
    for figures that stack several timelines."""
    events = list(result.timing.events) if result.timing is not None else []
    return len(_lanes(events)[0]) + _DMA_BAND_HEIGHT


def timeline(result: SimResult, path: str | Path | None = None, ax: "Axes | None" = None,
             title: str | None = None, colour_order: list[str] | None = None,
             window: tuple[float | None, float | None] | None = None) -> "Figure":
    """Plot the launch's engine timeline, its busy fractions and its SBUF/PSUM use; optionally
    save it as an image.

    Args:
        result: a timed launch.
        path: where to save (PNG or any format matplotlib knows by suffix); None: do not save.
        ax: draw only the lanes into this Axes (no utilisation or memory panel); its figure is
            returned.
        title: figure title; default names kernel, config and latency.
        colour_order: opcodes in the order their colours are given (default: this launch's
            opcodes sorted); timelines drawn with one order colour an opcode alike.
        window: ``(start_ns, end_ns)``: draw only this part of the launch (None for an end:
            the launch's start or end), at the full resolution of the image (lanes are binned
            over the window, not over the launch). An end past the latency is cut to it.

    Returns:
        the matplotlib Figure (close it with ``matplotlib.pyplot.close(fig)`` when done).

    Raises:
        TimelineWindowError: a window that is empty or starts at or after the latency.
    """
    import matplotlib

    matplotlib.use("Agg")  # headless: never needs a display
    import matplotlib.pyplot as plt

    latency = result.latency_ns  # raises UnsupportedError for an untimed launch
    events = list(result.timing.events) if result.timing is not None else []
    span = window_span(window, latency)
    if span != (0.0, latency):
        events = _clip(events, *span)
    n_dma = result.config.dma_engines
    if title is None:
        title = (f"{result.program.name} on {result.config.name}: "
                 f"{latency / 1000:.2f} µs, {len(events)} events")
        if span != (0.0, latency):
            title += f" (window {span[0] / 1000:,.3f}-{span[1] / 1000:,.3f} µs)"
    crit = critical_path(result.timing) if result.timing is not None else None
    labels = dma_labels(result)
    if ax is not None:
        _draw_lanes(ax, events, span, n_dma, crit, labels, colour_order)
        ax.set_title(title, fontsize=10)
        fig, lanes = ax.figure, ax
    else:
        n_lanes = len(_lanes(events)[0])
        fig, (lanes, util, mem) = plt.subplots(
            3, 1, sharex=True,
            figsize=(_FIG_WIDTH_IN, 1.2 + 0.45 * (n_lanes + _DMA_BAND_HEIGHT + 3.4)),
            gridspec_kw={"height_ratios": [n_lanes + _DMA_BAND_HEIGHT, 1.6, 1.6]}, dpi=_DPI)
        _draw_lanes(lanes, events, span, n_dma, crit, labels, colour_order)
        _draw_utilisation(util, events, span, n_dma)
        _draw_memory(mem, result, span)
        lanes.set_title(title, fontsize=10)
        fig.tight_layout()
    lanes.set_xlim(span[0] / 1000, max(span[1], span[0] + 1.0) / 1000)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=_DPI)
    return fig


class TimelineWindowError(SimulatorError):
    """A timeline window that holds no part of the launch."""


def window_span(window: tuple[float | None, float | None] | None,
                latency_ns: float) -> tuple[float, float]:
    """``window`` (ns; None ends: the launch's own) as a ``(start, end)`` inside the launch.

    Raises:
        TimelineWindowError: start >= end, a negative start, or a start at or after the latency.
    """
    start, end = window if window is not None else (None, None)
    start = 0.0 if start is None else float(start)
    end = latency_ns if end is None else min(float(end), latency_ns)
    if start < 0 or start >= latency_ns or (window is not None and window[1] is not None
                                           and float(window[1]) <= start):
        raise TimelineWindowError(expected(
            "timeline window", f"START < END within the launch (0 to {latency_ns / 1000:,.3f} "
            "µs)", f"{_us(window[0] if window else None)}:{_us(window[1] if window else None)} "
            "µs"))
    return start, end


def _us(ns: float | None) -> str:
    return "" if ns is None else f"{ns / 1000:g}"


def _clip(events: list[Event], start: float, end: float) -> list[Event]:
    """The events overlapping ``[start, end]``, cut to it."""
    return [Event(e.instr_id, e.engine, e.opcode, max(e.start_ns, start), min(e.end_ns, end),
                  e.nbytes, e.waited_on, e.source, e.instance)
            for e in events if e.end_ns > start and e.start_ns < end]


def save_timeline(result: SimResult, path: str | Path,
                  window: tuple[float | None, float | None] | None = None) -> Path:
    """Write :func:`timeline` of ``result`` (only ``window``, when given) to ``path`` and free
    the figure (for batch use, where open figures would pile up in memory)."""
    import matplotlib.pyplot as plt

    plt.close(timeline(result, path, window=window))
    return Path(path)


def comparison_timeline(res_a: SimResult, res_b: SimResult, path: str | Path,
                        labels: tuple[str, str] | None = None) -> Path:
    """Draw A's and B's engine timelines stacked, on one time axis (the longer latency), and
    save the image to ``path``; returns the path."""
    import matplotlib

    matplotlib.use("Agg")  # headless: never needs a display
    import matplotlib.pyplot as plt

    labels = labels or tuple(f"{r.program.name} on {r.config.name}" for r in (res_a, res_b))
    heights = [lane_count(r) for r in (res_a, res_b)]
    opcodes = sorted({e.opcode for r in (res_a, res_b) for e in r.timing.events}) \
        if res_a.timing is not None and res_b.timing is not None else None
    fig, axes = plt.subplots(2, 1, sharex=True,
                             figsize=(_FIG_WIDTH_IN, 1.5 + 0.45 * sum(heights)),
                             gridspec_kw={"height_ratios": heights}, dpi=_DPI)
    try:
        for ax, res, side, label in zip(axes, (res_a, res_b), "AB", labels):
            timeline(res, ax=ax, title=f"{side}: {label}: {res.latency_ns / 1000:,.2f} µs",
                     colour_order=opcodes)
        end_us = max(res_a.latency_ns, res_b.latency_ns, 1.0) / 1000
        axes[0].set_xlim(0, end_us)
        axes[1].set_xlabel("time (µs)")
        fig.tight_layout()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=_DPI)
    finally:
        plt.close(fig)
    return Path(path)
