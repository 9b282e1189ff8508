"""The affine indexing fast path (frontend/index/affine_index.py) against the general path.

``t[key]`` for keys of ints and ``nl.arange`` / ``nl.mgrid`` expressions must give the view (or
the error) the general path (``NkiTensor._index_affine``) gives, the second time too (from the
cache); a view it marks as inside its tensor must pass the bounds check, one it marks as
checked the layout check too, and the access pattern it carries must be the general path's.
A whole view hands out the same view for the same key. And ``t[...]`` is ``t[:, ..., :]``.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from neuroncore_sim.config import load_config
from neuroncore_sim.dtypes import float32
from neuroncore_sim.errors import SimulatorError
from neuroncore_sim.frontend.index.indexing import IndexExpr
from neuroncore_sim.frontend.tensors.tensor import NkiTensor
from neuroncore_sim.frontend.tracer import Tracer
from neuroncore_sim.program.ir import MemSpace, Program, TensorDecl


@st.composite
def _case(draw: st.DrawFn) -> tuple[TensorDecl, tuple, tuple]:
    """A tensor, a first basic key (a view of it) and an affine key for that view."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    space = draw(st.sampled_from([MemSpace.SBUF, MemSpace.HBM]))
    # (block dims before the partition dim: views whose first axis is not the partitions)
    pa = draw(st.integers(0, len(shape) - 1)) if space is MemSpace.SBUF else 0
    first = tuple(draw(st.sampled_from([slice(None), 0, 1, slice(0, 1), slice(1, None)]))
                  for _ in range(draw(st.integers(0, len(shape)))))
    with Tracer(Program("t"), load_config(None)).active():
        try:
            view_shape = NkiTensor.whole(TensorDecl(0, "t", space, shape, float32, pa)
                                         )[first].shape
        except SimulatorError:  # (an index past a small axis): the whole tensor instead
            first, view_shape = (), shape
    n_grid = draw(st.integers(1, 2))
    key = []
    n_items = max(1, len(view_shape))  # (other lengths never take the fast path)
    expr_at = draw(st.integers(0, n_items - 1))  # (at least one expression: else ints only)
    for a in range(n_items):
        if a != expr_at and draw(st.booleans()):
            key.append(draw(st.integers(-1, 6)))
            continue
        sizes = tuple(draw(st.integers(1, 4)) for _ in range(n_grid))
        coefs = tuple(draw(st.integers(-1, 2)) if n > 1 else 0 for n in sizes)
        key.append(IndexExpr(draw(st.integers(-1, 5)), coefs, sizes))
    return TensorDecl(0, "t", space, shape, float32, pa), first, tuple(key)


def _outcome(fn):
    try:
        v = fn()
    except SimulatorError as e:
        return ("error", type(e), str(e).split(": ", 1)[-1])  # (without the test's line)
    return ("view", v.shape, v.base, v.coefs, v.out_of_bounds())


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_case())
def test_affine_fast_path_matches_general_path(case) -> None:
    decl, first, key = case
    with Tracer(Program("t"), load_config(None)).active():
        view = NkiTensor.whole(decl)[first]
        # the same key on views of other bases (t[0] and t[1]) must not share a cached view
        others = [view] + [NkiTensor.whole(decl)[i] for i in range(min(2, decl.shape[0]))
                           if len(decl.shape) > 1 and len(first) == 1 and type(first[0]) is int]
        # the same grids with other ints and constants: one remembered form, other bases
        shifted = tuple(k + 1 if type(k) is int else IndexExpr(k.const + 2, k.coefs, k.sizes)
                        for k in key)
        for v, key in [(v, k) for v in others for k in (key, shifted)]:
            general = _outcome(lambda: v._index_affine(key))
            assert _outcome(lambda: v[key]) == general
            assert _outcome(lambda: v[key]) == general  # from the cache now
            got = v[key] if general[0] == "view" else None
            if got is None:
                continue
            assert got._inside == (got.out_of_bounds() is None)
            if got._checked:  # (operands.checked_access skips its checks)
                assert got.out_of_bounds() is None and got.tile_error() is None
            if got._access is not None:
                ref = v._index_affine(key).access()
                assert (got._access.offset, got._access.pattern) == (ref.offset, ref.pattern)
            if v._views is not None:
                assert v[key] is got


def test_ellipsis_is_every_axis_whole() -> None:
    decl = TensorDecl(0, "t", MemSpace.SBUF, (4, 128, 6), float32, 1)
    with Tracer(Program("t"), load_config(None)).active():
        whole = NkiTensor.whole(decl)
        for view in (whole, whole[1], whole[:, 2:4]):
            a, b = view[...], view[(slice(None),) * len(view.shape)]
            assert (a.shape, a.base, a.coefs) == (b.shape, b.base, b.coefs)
