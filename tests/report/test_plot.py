"""Timeline plot: the PNG is produced and shows something; interval merging and busy fraction."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.report import plot
from neuroncore_sim.timing.events import Event

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels"))
import tensor_add  # noqa: E402  (kernels/ is a folder of scripts)


@pytest.fixture(scope="module")
def result():
    a = np.ones((128, 1024), np.float32)
    return ncs.simulate(tensor_add.kernel, a, a, grid=(1, 2))


def test_png_is_written_and_not_blank(result, tmp_path):
    import matplotlib.image
    import matplotlib.pyplot as plt

    path = tmp_path / "out" / "timeline.png"
    fig = plot.timeline(result, path)
    plt.close(fig)
    assert path.stat().st_size > 10_000
    img = matplotlib.image.imread(path)[..., :3]
    coloured = np.abs(img - img.mean(axis=2, keepdims=True)).sum(axis=2) > 0.1
    assert coloured.mean() > 0.01, "bars should colour more than 1% of the image"
    assert (img < 0.9).any(axis=2).mean() < 0.6, "mostly white background expected"


def test_lanes_and_legend(result):
    import matplotlib.pyplot as plt

    fig = plot.timeline(result)
    lanes, util, mem, psum = fig.axes  # psum: the memory panel's twin axis
    labels = [t.get_text() for t in lanes.get_yticklabels()]
    assert labels[:4] == ["tensor", "vector", "scalar", "gpsimd"]
    assert labels[-1].startswith("dma")
    legend = [t.get_text() for t in lanes.get_legend().get_texts()]
    # compute lanes by opcode, DMA lanes by the line and tensor they move
    assert legend == ["tensor_tensor", "dma: tensor_add.py:30 a", "dma: tensor_add.py:31 b",
                      "dma: tensor_add.py:32 hbm0", "critical path"]
    assert lanes.get_xlim()[1] == pytest.approx(result.latency_ns / 1000)
    # the red line runs through the critical path's events, in order, first start to last end
    from neuroncore_sim.timing.critical_path import critical_path

    steps = critical_path(result.timing).steps
    (line,) = [ln for ln in lanes.get_lines() if ln.get_label() == "critical path"]
    xs = line.get_xdata()
    assert len(xs) == 2 * len(steps)
    assert xs[0] == pytest.approx(steps[0].event.start_ns / 1000)
    assert xs[-1] == pytest.approx(result.latency_ns / 1000)
    plt.close(fig)


def test_draws_into_given_axes(result):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert plot.timeline(result, ax=ax) is fig
    assert len(fig.axes) == 1 and ax.collections  # bars were drawn
    plt.close(fig)


def test_merge_intervals_joins_close_bars_only():
    spans = plot.merge_intervals(np.array([5.0, 0.0, 1.05, 3.0]), np.array([6.0, 1.0, 2.0, 4.0]),
                                 gap=0.1)
    assert spans == [(0.0, 2.0), (3.0, 1.0), (5.0, 1.0)]
    assert plot.merge_intervals(np.array([]), np.array([]), 1.0) == []


def test_busy_fraction_is_exact():
    evs = [Event(0, "vector", "x", 0.0, 10.0), Event(1, "scalar", "y", 5.0, 15.0),
           Event(2, "dma0", "dma_copy", 0.0, 20.0)]
    edges = np.array([0.0, 5.0, 10.0, 20.0])
    frac = plot.busy_fraction(evs, {"vector", "scalar"}, 2, edges)
    # [0,5): vector only; [5,10): both; [10,20): scalar for 5 of 10 ns.
    assert frac.tolist() == pytest.approx([0.5, 1.0, 0.25])
    assert plot.busy_fraction(evs, {"gpsimd"}, 1, edges).tolist() == [0.0, 0.0, 0.0]


def test_occupancy_per_bin_is_exact():
    starts, ends = np.array([0.0, 12.0]), np.array([6.0, 20.0])
    # bins [0,10): 6 ns busy; [10,20): 8 ns busy.
    assert plot.occupancy(starts, ends, np.array([0.0, 10.0, 20.0])).tolist() == \
        pytest.approx([0.6, 0.8])


def test_bin_max_of_a_step_function():
    times = np.array([0.0, 3.0, 4.0, 12.0])
    values = np.array([1, 5, 2, 7])
    # [0,5): 1, then 5 from 3, then 2 from 4 -> 5; [5,10): 2; [10,15): 2 then 7 from 12 -> 7.
    assert plot.bin_max(times, values, np.array([0.0, 5.0, 10.0, 15.0])).tolist() == [5, 2, 7]


def _dense_result(n: int):
    """A fake launch: n vector events of 1 ns every 4 ns (busy a quarter of the time)."""
    from neuroncore_sim.timing.events import TimingResult
    from neuroncore_sim.program.ir import Program
    from neuroncore_sim.result import SimResult

    evs = tuple(Event(i, "vector", "tensor_copy", 4.0 * i, 4.0 * i + 1.0) for i in range(n))
    timing = TimingResult(evs, latency_ns=4.0 * n, busy_ns={"vector": float(n)})
    return SimResult(Program("dense"), (), ncs.TRN1, timing)


def _vector_polys(fig):
    from matplotlib.collections import PolyCollection

    lanes = fig.axes[0]
    labels = [t.get_text() for t in lanes.get_yticklabels()]
    lane_centre = lanes.get_yticks()[labels.index("vector")]
    polys = [c for c in lanes.collections if isinstance(c, PolyCollection)]
    return [c for c in polys
            if abs(c.get_paths()[0].vertices[:, 1].min() + 0.4 - lane_centre) < 1e-6]


def test_dense_lane_is_binned_to_its_busy_share():
    import matplotlib.pyplot as plt

    # 2400 events on a 1200-bin lane (more than one per 8 pixels, so binned): bins of 8 ns,
    # each holding two 1 ns events.
    fig = plot.timeline(_dense_result(2400))
    polys = _vector_polys(fig)
    assert len(polys) == 2  # grey "active" band + the opcode's occupancy
    heights = sorted(np.ptp(p.get_paths()[0].vertices[:, 1]) for p in polys)
    # lane height 0.8: occupancy 1/4 -> 0.2 tall; the active band the full 0.8.
    assert heights == pytest.approx([0.2, 0.8], abs=0.01)
    assert "bar height = share of each pixel busy" in " ".join(
        t.get_text() for t in fig.axes[0].texts)
    plt.close(fig)


def test_sparse_lane_is_drawn_exactly():
    import matplotlib.pyplot as plt

    fig = plot.timeline(_dense_result(100))  # 100 * 8 < 1200: one bar per event
    lanes = fig.axes[0]
    assert not lanes.texts  # no "binned" note
    bars = [c for c in lanes.collections if type(c).__name__ == "PolyCollection"
            and len(c.get_paths()) == 100]
    assert len(bars) == 1
    plt.close(fig)


def test_memory_panel(result):
    import matplotlib.pyplot as plt

    fig = plot.timeline(result)
    mem = fig.axes[2]  # SBUF; fig.axes[3] is its twin with PSUM
    labels = [t.get_text() for t in mem.get_legend().get_texts()]
    peak = result.summary()["memory"]["sbuf"]["peak_bytes_per_partition"]
    assert labels == [
        f"SBUF (peak {peak:,} of 180,224 B/partition, {100 * peak / 180224:.1f}%)",
        "PSUM (peak 0 of 16,384 B/partition, 0.0%)"]
    assert max(mem.get_lines()[0].get_ydata()) == pytest.approx(peak / 1024)
    assert mem.get_ylim()[1] == pytest.approx(peak * 1.15 / 1024)
    plt.close(fig)
