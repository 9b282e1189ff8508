"""Timeline of part of a launch (``window``) and the labelled DMA queues (issue 27, item 7):
a large kernel's timeline is no longer a solid wall."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.program.ir import Program
from neuroncore_sim.report import plot
from neuroncore_sim.result import SimResult
from neuroncore_sim.timing.events import Event, TimingResult


def _dense(n: int) -> SimResult:
    """n vector events of 1 ns every 4 ns, and one DMA transfer on queue 3."""
    evs = tuple(Event(i, "vector", "tensor_copy", 4.0 * i, 4.0 * i + 1.0) for i in range(n))
    evs += (Event(n, "dma3", "dma_copy", 10.0, 30.0, nbytes=64),)
    timing = TimingResult(evs, latency_ns=4.0 * n, busy_ns={"vector": float(n)})
    return SimResult(Program("dense"), (), ncs.TRN1, timing)


def _bars(fig, count):
    return [c for c in fig.axes[0].collections if type(c).__name__ == "PolyCollection"
            and len(c.get_paths()) == count]


def test_a_window_draws_its_part_at_full_resolution():
    res = _dense(2400)  # 2400 events over 1200 pixels: binned over the whole launch
    whole = plot.timeline(res)
    assert "bar height = share of each pixel busy" in " ".join(t.get_text()
                                                               for t in whole.axes[0].texts)
    plt.close(whole)
    fig = plot.timeline(res, window=(0.0, 400.0))  # 100 events: one bar each
    assert fig.axes[0].get_xlim() == pytest.approx((0.0, 0.4))
    assert not fig.axes[0].texts and len(_bars(fig, 100)) == 1
    assert "(window 0.000-0.400 µs)" in fig.axes[0].get_title()
    plt.close(fig)


def test_events_crossing_the_window_are_cut_to_it():
    fig = plot.timeline(_dense(2400), window=(20.0, None))  # from 20 ns to the end
    assert fig.axes[0].get_xlim() == pytest.approx((0.02, 9.6))
    plt.close(fig)
    assert plot.window_span((None, 1e9), 9600.0) == (0.0, 9600.0)  # an end past it: cut
    events = list(_dense(10).timing.events)
    spans = [(e.start_ns, e.end_ns) for e in plot._clip(events, 0.5, 12.5)]
    assert spans == [(0.5, 1.0), (4.0, 5.0), (8.0, 9.0), (12.0, 12.5), (10.0, 12.5)]


@pytest.mark.parametrize("window", [(9600.0, None), (50.0, 50.0), (60.0, 10.0), (-1.0, 5.0)])
def test_a_window_outside_the_launch_is_refused(window):
    with pytest.raises(plot.TimelineWindowError,
                       match=r"timeline window; expected START < END within the launch "
                             r"\(0 to 9.600 µs\)"):
        plot.window_span(window, 9600.0)


def test_dma_queues_are_labelled():
    fig = plot.timeline(_dense(10))
    lanes = fig.axes[0]
    minor = [t.get_text() for t in lanes.get_yticklabels(minor=True)]
    assert minor == [f"dma{q}" for q in range(16)]
    # each label sits at the middle of its queue's sub-lane: dma3's bar is centred on it
    (bar,) = [c for c in lanes.collections if type(c).__name__ == "PolyCollection"
              and c.get_facecolor()[0][:3].tolist() != [1.0, 1.0, 1.0]
              and len(c.get_paths()) == 1 and c.get_paths()[0].vertices[:, 0].min() < 0.011
              and c.get_paths()[0].vertices[:, 0].max() > 0.029]
    ys = bar.get_paths()[0].vertices[:, 1]
    assert (ys.min() + ys.max()) / 2 == pytest.approx(lanes.get_yticks(minor=True)[3], abs=0.02)
    assert [t.get_text() for t in lanes.get_yticklabels()][-1] == "dma\n(16 engines)"
    plt.close(fig)
