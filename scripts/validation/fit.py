"""Fit global config fields on chosen cases, and the leave-one-set-out errors.

The fit minimises sum over the chosen cases of log(estimate / published)^2 over the logs of
the named fields (``scipy.optimize.least_squares``, bounded, finite differences of 2 % in the
log), each evaluation re-running the cases under the trial values (the cache makes a repeated
point free). Only global fields, never per-kernel factors. A case that fails under a trial
value counts as a residual of log(10).

Leave-one-set-out: for each set S among the fit's sets (two or more), the fields are refitted
on the other sets' chosen cases and S's chosen cases are run under that refit: S's errors are
what a kernel of a set the fit has not seen can expect.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .runner import Case
from .stats import error_stats, log_residual

FAILED_RESIDUAL = math.log(10.0)


@dataclass(frozen=True)
class Param:
    """One fitted field (dotted for a nested option: ``options.field``) and its bounds."""

    name: str
    lo: float
    hi: float


def parse_params(spec: str, base: Any) -> list[Param]:
    """``FIELD[:LO:HI],...`` against the config ``base``; default bounds base/4 .. base*4."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        parts = item.split(":")
        if len(parts) not in (1, 3):
            raise SystemExit(f"--fit {item!r}: expected FIELD or FIELD:LO:HI")
        value = get_field(base, parts[0])
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise SystemExit(f"--fit {parts[0]}: expected a positive number field, found "
                             f"{value!r}")
        lo, hi = (value / 4, value * 4) if len(parts) == 1 else (float(parts[1]), float(parts[2]))
        if not 0 < lo < hi:
            raise SystemExit(f"--fit {item!r}: expected 0 < LO < HI")
        out.append(Param(parts[0], lo, hi))
    return out


def get_field(config: Any, dotted: str) -> Any:
    """A (possibly nested) field of ``config``, with a clear error for an unknown name."""
    obj = config
    for part in dotted.split("."):
        if not dataclasses.is_dataclass(obj) or part not in {f.name for f in
                                                             dataclasses.fields(obj)}:
            raise SystemExit(f"--fit {dotted}: {part!r} is not a field of "
                             f"{type(obj).__name__}")
        obj = getattr(obj, part)
    return obj


def apply_overrides(config: Any, overrides: dict[str, Any]) -> Any:
    """``config`` with (possibly dotted, nested) fields replaced; ints stay ints (rounded)."""
    for dotted, value in overrides.items():
        head, _, rest = dotted.partition(".")
        current = getattr(config, head)
        if rest:
            value = apply_overrides(current, {rest: value})
        elif isinstance(current, int) and not isinstance(current, bool):
            value = int(round(value))
        config = dataclasses.replace(config, **{head: value})
    return config


@dataclass
class FitResult:
    """Fitted values, the cases used, their errors before and after, and the cost of it."""

    values: dict[str, float]
    case_ids: list[str]
    before: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    after: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    evaluations: int = 0
    seconds: float = 0.0
    message: str = ""


def _errors(cases: list[Case], results: dict[str, dict]) -> dict[str, tuple[float, float] | None]:
    by_set: dict[str, list] = {}
    for c in cases:
        r = results.get(c.id, {})
        by_set.setdefault(c.set, [])
        if r.get("ok"):
            by_set[c.set].append((r["estimate"], c.published))
    return {s: error_stats(p) for s, p in by_set.items()}


def fit(run: Callable[[list[Case], dict], dict[str, dict]], cases: list[Case],
        params: list[Param], start: dict[str, float], max_evals: int) -> FitResult:
    """Fit ``params`` on ``cases`` (``run(cases, overrides)`` gives results by case id)."""
    try:
        import numpy as np
        from scipy.optimize import least_squares
    except ImportError:
        raise SystemExit("--fit needs scipy (not a dependency of the package): "
                         "pip install scipy") from None
    t0, count = time.time(), [0]

    def overrides(x) -> dict[str, float]:
        return {p.name: float(math.exp(v)) for p, v in zip(params, x)}

    def residuals(x):
        count[0] += 1
        results = run(cases, overrides(x))
        return np.array([log_residual(results[c.id]["estimate"], c.published)
                         if results.get(c.id, {}).get("ok") and results[c.id]["estimate"] > 0
                         else FAILED_RESIDUAL for c in cases])

    x0 = [math.log(min(max(start[p.name], p.lo), p.hi)) for p in params]
    lo, hi = [math.log(p.lo) for p in params], [math.log(p.hi) for p in params]
    before = _errors(cases, run(cases, {}))  # the config as it is
    sol = least_squares(residuals, x0, bounds=(lo, hi), max_nfev=max_evals, diff_step=0.02,
                        x_scale=1.0)
    values = overrides(sol.x)
    after = _errors(cases, run(cases, values))
    return FitResult(values, [c.id for c in cases], before, after, count[0],
                     time.time() - t0, sol.message)


def leave_one_set_out(run: Callable[[list[Case], dict], dict[str, dict]], cases: list[Case],
                      params: list[Param], start: dict[str, float], max_evals: int
                      ) -> dict[str, tuple[FitResult, tuple[float, float] | None]]:
    """For each set of ``cases`` (when there are two or more): the refit without it and its
    (median, max) absolute error under that refit."""
    sets = sorted({c.set for c in cases})
    out = {}
    if len(sets) < 2:
        return out
    for held in sets:
        kept = [c for c in cases if c.set != held]
        refit = fit(run, kept, params, start, max_evals)
        held_cases = [c for c in cases if c.set == held]
        out[held] = (refit, _errors(held_cases, run(held_cases, refit.values)).get(held))
    return out
