"""Progress bars for long simulations, drawn with tqdm on stderr.

The simulator's layers only call plain hooks (``Tracer.on_record``, the ``progress`` callback
of :func:`~neuroncore_sim.timing.engines.simulate_timing`); :func:`tqdm_bar` is the
:data:`~neuroncore_sim.simulate.ProgressFactory` that turns them into bars. The package's
``__init__`` registers it for ``ncs.simulate(..., progress=True)``; the command line uses it
when stderr is a terminal (``--no-progress`` turns it off). tqdm is imported when the first bar
is made, so importing the package does not load it.
"""

from __future__ import annotations

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
