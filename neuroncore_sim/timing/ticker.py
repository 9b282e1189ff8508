"""Progress of a timing run: counts finished instructions for an optional callback."""

from __future__ import annotations

from typing import Callable

#: About this many progress callbacks per launch (each one is a Python call into the caller).
PROGRESS_CALLS = 200


class Ticker:
    """Counts finished instructions and reports every ``total / PROGRESS_CALLS`` of them."""

    def __init__(self, callback: Callable[[int], None] | None, total: int) -> None:
        self.callback, self.count = callback, 0
        self.step = max(1, total // PROGRESS_CALLS)

    def __call__(self) -> None:
        self.count += 1
        if self.callback is not None and self.count % self.step == 0:
            self.callback(self.count)

    def done(self) -> None:
        if self.callback is not None and self.count % self.step != 0:
            self.callback(self.count)
