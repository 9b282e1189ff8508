"""The bounded Levenberg-Marquardt solver against numpy's linear least squares."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neuroncore_sim.calibrate.lm import least_squares

BIG = np.array([1e9, 1e9])


def _line_problem(seed: int):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 3.0, 12)
    y = 1.5 + 0.7 * t + rng.normal(0, 0.05, t.size)
    return t, y, lambda x: x[0] + x[1] * t - y


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_unbounded_linear_fit_matches_lstsq(seed: int) -> None:
    t, y, fun = _line_problem(seed)
    sol = least_squares(fun, np.zeros(2), -BIG, BIG)
    ref, *_ = np.linalg.lstsq(np.stack([np.ones_like(t), t], axis=1), y, rcond=None)
    np.testing.assert_allclose(sol.x, ref, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sol.jacobian, np.stack([np.ones_like(t), t], axis=1), rtol=1e-6)


def test_an_active_bound_is_respected_and_the_rest_refit() -> None:
    t, y, fun = _line_problem(3)
    # slope held at most 0.5: the best intercept for slope 0.5 is mean(y - 0.5 t)
    sol = least_squares(fun, np.zeros(2), np.array([-10.0, -10.0]), np.array([10.0, 0.5]))
    assert sol.x[1] == 0.5
    np.testing.assert_allclose(sol.x[0], np.mean(y - 0.5 * t), rtol=1e-6)


def test_nonlinear_exponential_decay() -> None:
    t = np.linspace(0.0, 4.0, 20)
    y = 3.0 * np.exp(-1.3 * t)
    sol = least_squares(lambda x: x[0] * np.exp(-x[1] * t) - y, np.array([1.0, 0.5]),
                        np.array([0.1, 0.1]), np.array([10.0, 10.0]))
    np.testing.assert_allclose(sol.x, [3.0, 1.3], rtol=1e-5)
