"""Bounded (projected) Levenberg-Marquardt least squares, in numpy.

The calibration fit has a handful of parameters and a few dozen residuals whose evaluation is a
re-timing of the suite; a small, readable solver is enough (and keeps scipy out of the package's
dependencies). The Jacobian is taken by forward differences; a parameter at a bound that the
descent pushes against is held there for the step, and a step leaving the bounds is projected
back onto them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Solution:
    """Where the solver stopped: the point, its residuals and Jacobian, and why it stopped."""

    x: np.ndarray
    residuals: np.ndarray
    jacobian: np.ndarray
    iterations: int
    evaluations: int
    message: str


def jacobian(fun: Callable[[np.ndarray], np.ndarray], x: np.ndarray, r: np.ndarray,
             lo: np.ndarray, hi: np.ndarray, step: float) -> np.ndarray:
    """Forward differences of ``fun`` at ``x`` (backward where a forward step leaves the box)."""
    cols = []
    for i in range(len(x)):
        h = step if x[i] + step <= hi[i] else -step
        trial = x.copy()
        trial[i] += h
        cols.append((fun(trial) - r) / h)
    return np.stack(cols, axis=1) if cols else np.zeros((len(r), 0))


def least_squares(fun: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, lo: np.ndarray,
                  hi: np.ndarray, *, step: float = 1e-4, max_iterations: int = 60,
                  tolerance: float = 1e-12, gain_tolerance: float = 1e-10) -> Solution:
    """Minimise ``sum(fun(x)**2)`` over ``lo <= x <= hi`` from ``x0``.

    Each iteration solves ``(J'J + lam * diag(J'J)) d = -J'r``, projects ``x + d`` onto the box
    and keeps it if the cost went down (then ``lam`` shrinks; else it grows and the step is
    retried). Stops when the cost or the step stops changing (relative ``tolerance``), or when
    the linearised model promises less than ``gain_tolerance`` of the cost from the least
    damped step: at a minimum of a re-timed suite (a function with tiny kinks) retrying ever
    more damped steps would cost a full evaluation each for nothing.
    """
    x = np.clip(np.asarray(x0, dtype=float), lo, hi)
    r = fun(x)
    evaluations, lam, message = 1, 1e-3, "iteration limit reached"
    J = jacobian(fun, x, r, lo, hi, step)
    evaluations += len(x)
    it = 0
    for it in range(1, max_iterations + 1):
        cost = float(r @ r)
        if cost == 0.0:
            message = "exact fit"
            break
        g = J.T @ r
        # a parameter on a bound the descent pushes against stays there this step; the step of
        # the others is solved without it (else projection would undo their coupled moves)
        free = ~(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)))
        if not free.any():
            message = "every parameter is held at a bound"
            break
        Jf = J[:, free]
        A = Jf.T @ Jf
        damping = np.diag(np.maximum(np.diag(A), 1e-12))
        improved = False
        for _ in range(30):
            d = np.zeros_like(x)
            try:
                d[free] = np.linalg.solve(A + lam * damping, -g[free])
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            trial = np.clip(x + d, lo, hi)
            model = r + J @ (trial - x)
            if cost - float(model @ model) <= gain_tolerance * cost:
                break  # not improved: the linear model sees no gain worth an evaluation
            r_trial = fun(trial)
            evaluations += 1
            new_cost = float(r_trial @ r_trial)
            if new_cost < cost:
                moved = float(np.max(np.abs(trial - x))) if len(x) else 0.0
                x, r, lam, improved = trial, r_trial, max(lam / 3, 1e-12), True
                break
            lam *= 4
        if not improved:
            message = "converged (no step lowers the cost)"
            break
        J = jacobian(fun, x, r, lo, hi, step)
        evaluations += len(x)
        if cost - new_cost <= tolerance * cost or moved <= tolerance:
            message = "converged"
            break
    return Solution(x, r, J, it, evaluations, message)
