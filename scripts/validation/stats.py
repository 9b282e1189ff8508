"""Pure statistics of the validation report (no simulator imports: cheap to test)."""

from __future__ import annotations

import math
import statistics
from typing import Iterable, Sequence


def pct_error(estimate: float, published: float) -> float:
    """Signed error of ``estimate`` against ``published``, in percent of ``published``."""
    return 100.0 * (estimate - published) / published


def error_stats(pairs: Iterable[tuple[float, float]]) -> tuple[float, float] | None:
    """(median, max) absolute percent error over (estimate, published) pairs; None if empty."""
    errs = [abs(pct_error(e, p)) for e, p in pairs]
    if not errs:
        return None
    return statistics.median(errs), max(errs)


def ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman rank correlation (Pearson of the tie-averaged ranks); None with fewer than two
    points or when either side is constant."""
    if len(xs) != len(ys):
        raise ValueError(f"spearman: {len(xs)} values against {len(ys)}")
    if len(xs) < 2:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def step_signs(published: Sequence[float], estimates: Sequence[float],
               threshold: float = 0.03) -> tuple[int, int]:
    """Over consecutive versions whose published figure moved by more than ``threshold``
    (relative to the earlier one): (steps the estimates move the same way, such steps).
    A step the estimates do not move at all counts as a disagreement."""
    agree = total = 0
    for i in range(1, len(published)):
        before, after = published[i - 1], published[i]
        if abs(after - before) <= threshold * abs(before):
            continue
        total += 1
        moved = estimates[i] - estimates[i - 1]
        agree += (moved > 0) == (after > before) and moved != 0
    return agree, total


def weighted_abs_error(pairs: Iterable[tuple[float, float]]) -> float | None:
    """sum |sim - measured| / sum measured, in percent, over (sim, measured) pairs; None when
    the measured values sum to zero."""
    pairs = list(pairs)
    denom = sum(m for _, m in pairs)
    if denom <= 0:
        return None
    return 100.0 * sum(abs(s - m) for s, m in pairs) / denom


def within(sim: float, measured: float, tol: float = 0.30) -> bool:
    """``sim`` within ``tol`` (relative) of ``measured``."""
    return abs(sim - measured) <= tol * abs(measured)


def log_residual(estimate: float, published: float) -> float:
    """log(estimate / published): the fit's residual (symmetric in over/under-estimates)."""
    return math.log(estimate / published)
