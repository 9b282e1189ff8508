"""Progress bars for long simulations, drawn with tqdm on stderr.

The simulator's layers only call plain hooks (``Tracer.on_record``, the ``progress`` callback
of :func:`~neuroncore_sim.timing.engines.simulate_timing`); :func:`tqdm_bar` is the
:data:`~neuroncore_sim.simulate.ProgressFactory` that turns them into bars. The package's
``__init__`` registers it for ``ncs.simulate(..., progress=True)``; the command line uses it
when stderr is a terminal, and :func:`log_lines` otherwise (a log, a pipe: a line now and then
for a launch that runs long); ``--no-progress`` turns both off. tqdm is imported when the first bar
is made, so importing the package does not load it.
"""

from __future__ import annotations

import sys
import time
from typing import Any

#: Bars of launches shorter than this (seconds) are never drawn (tqdm's ``delay``).
BAR_DELAY_S = 0.5


class TqdmBar:
    """A tqdm bar fed with absolute counts (the hooks report "done so far").

    Args:
        description: shown left of the bar ("kernel: timing").
        total: the count at completion, or None when unknown (tracing).
        file: where to draw (default: tqdm's, stderr).
    """

    def __init__(self, description: str, total: int | None, file: Any = None) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=total, desc=description, unit=" instr", delay=BAR_DELAY_S,
                         file=file, leave=False, dynamic_ncols=True)

    def update(self, done: int) -> None:
        """Move the bar to ``done`` instructions."""
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()


def tqdm_bar(description: str, total: int | None) -> TqdmBar:
    """The default progress factory: a :class:`TqdmBar` on stderr."""
    return TqdmBar(description, total)


#: Progress lines of :func:`log_lines`: the first after this many seconds, then one per period.
LOG_AFTER_S, LOG_EVERY_S = 10.0, 30.0


class LogLines:
    """Progress of a long launch as plain lines on stderr (where a bar cannot be drawn): none
    before :data:`LOG_AFTER_S`, then at most one per :data:`LOG_EVERY_S` seconds, so a trace
    of millions of instructions says how far it got."""

    def __init__(self, description: str, total: int | None) -> None:
        self.description, self.total = description, total
        self.start = self.last = time.monotonic()

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.start < LOG_AFTER_S or (self.last > self.start
                                              and now - self.last < LOG_EVERY_S):
            return
        self.last = now
        of = f" of {self.total:,}" if self.total else ""
        print(f"neuroncore-sim: {self.description}: {done:,}{of} instructions "
              f"({now - self.start:.0f} s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Nothing to remove."""


def log_lines(description: str, total: int | None) -> LogLines:
    """The progress factory of a stderr that is not a terminal: :class:`LogLines`."""
    return LogLines(description, total)
