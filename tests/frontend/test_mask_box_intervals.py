"""``mask_box`` finds the box of a mask made of one-axis comparisons (tile bounds, the usual
``mask=``) without evaluating it over a grid (frontend/index/mask_view.py ``_intervals``, a speed
path): the same box, residual and emptiness as the grid, on random comparisons."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from neuroncore_sim.frontend.index import mask_view
from neuroncore_sim.program.ir import Affine, Predicate

OPS = ["<", "<=", ">", ">=", "==", "!="]


@st.composite
def predicates(draw, ndim):
    def one():
        coefs = [0] * ndim
        for a in draw(st.lists(st.integers(0, ndim - 1), max_size=2)):
            coefs[a] = draw(st.sampled_from([-3, -1, 1, 2, 512]))
        return Predicate(draw(st.sampled_from(OPS)),
                         Affine(draw(st.integers(-1100, 1100)), tuple(coefs)))
    parts = [one() for _ in range(draw(st.integers(1, 3)))]
    return parts[0] if len(parts) == 1 else Predicate("and", None, tuple(parts))


def _grid(pred, shape):
    """mask_box's answer from the grid (its general path)."""
    active = pred.evaluate(shape)
    if not active.any():
        return True, None
    box = []
    for a in range(len(shape)):
        other = tuple(b for b in range(len(shape)) if b != a)
        idx = active.any(axis=other).nonzero()[0] if other else active.nonzero()[0]
        box.append((int(idx[0]), int(idx[-1]) + 1))
    sub = active[tuple(slice(lo, hi) for lo, hi in box)]
    return False, (tuple(box) if sub.all() else None)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.data())
def test_intervals_give_the_grid_box(data) -> None:
    shape = data.draw(st.sampled_from([(128, 512), (7, 1), (4, 3, 1024), (1,)]))
    pred = data.draw(predicates(len(shape)))
    axes = mask_view._intervals(pred, [(0, n) for n in shape])
    if axes is None:
        return  # (not a conjunction of one-axis comparisons: the grid decides)
    empty, box = _grid(pred, shape)
    if empty:
        assert any(lo >= hi for lo, hi in axes)
    else:
        assert tuple(axes) == box
