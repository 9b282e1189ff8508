"""The int/slice indexing fast path (frontend/index/basic_index.py) against the general path.

Wherever the fast path answers, it must give the view the general path
(``NkiTensor._index_basic``) gives; and ``t[key]`` (fast path, cached views) must give the same
view or the same error as the general path for any key. A view the fast path marks as inside
its tensor (so operands skip its bounds check) must pass that check.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from neuroncore_sim.config import load_config
from neuroncore_sim.dtypes import float32
from neuroncore_sim.errors import SimulatorError
from neuroncore_sim.frontend.index.basic_index import basic_index, view_key
from neuroncore_sim.frontend.broadcast import relabel
from neuroncore_sim.frontend.index.indexing import trailing_unit_indices
from neuroncore_sim.frontend.tensors.tensor import NkiTensor
from neuroncore_sim.frontend.tracer import Tracer
from neuroncore_sim.program.ir import MemSpace, Program, TensorDecl


def _bound(n: int) -> st.SearchStrategy:
    """A slice bound for an axis of size ``n``: mostly near the ends, where off-by-ones hide."""
    return st.none() | st.sampled_from([-n - 1, -n, -1, 0, 1, n - 1, n, n + 1]) | st.integers(
        -n - 2, n + 2)


def _item(n: int) -> st.SearchStrategy:
    """One key item for an axis of size ``n``: mostly ints and slices (in range or not), and
    the items the fast path leaves to the general path."""
    return st.one_of(
        st.integers(-n - 1, n),
        st.builds(slice, _bound(n), _bound(n), st.none() | st.integers(-1, 3)),
        st.sampled_from([None, Ellipsis, True, np.int64(0), slice(np.int64(0), None),
                         slice(0, 1.0)]))


@st.composite
def _case(draw: st.DrawFn) -> tuple[TensorDecl, tuple, tuple]:
    """A declared tensor, a first key (a view of it, via the general path) and a second key
    whose items fit the view's axes (or miss them by a little)."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    space = draw(st.sampled_from([MemSpace.SBUF, MemSpace.HBM]))
    pa = draw(st.integers(0, len(shape) - 1)) if space is MemSpace.SBUF else 0
    decl = TensorDecl(0, "t", space, shape, float32, pa)
    first = tuple(draw(st.lists(st.one_of(st.integers(0, min(shape) - 1),
                                          st.builds(slice, st.none() | st.integers(0, 1),
                                                    st.none(), st.none() | st.integers(1, 2))),
                                max_size=len(shape))))
    with Tracer(Program("t"), load_config(None)).active():
        try:
            view_shape = NkiTensor.whole(decl)._index_basic(first).shape
        except SimulatorError:  # (an empty slice): index the whole tensor instead
            first, view_shape = (), shape
    sizes = view_shape + (2,)  # (one item more than the view has axes, now and then)
    second = tuple(draw(_item(sizes[a])) for a in range(draw(st.integers(0, len(sizes)))))
    return decl, first, second


def _general(view: NkiTensor, key: tuple) -> tuple:
    """What the general path gives: the view's geometry or the error (an on-chip tile indexed
    past its axes by unit indices is its [.., 1] relabelling, as NkiTensor.__getitem__ does).
    A lone ``True`` is a mask subscript that keeps every element (mask_view.py): the view."""
    if len(key) == 1 and key[0] is True:
        return _geometry(view)
    try:
        if view.space is not MemSpace.HBM and trailing_unit_indices(view.ndim, key):
            view = relabel(view, view.shape + (1,) * (len(key) - view.ndim))
        v = view._index_basic(key)
    except SimulatorError as e:
        return ("error", type(e), e.message)
    return ("view", v.shape, v.base, v.coefs, v.decl, v.dtype, v.space)


def _geometry(v: NkiTensor) -> tuple:
    return ("view", v.shape, v.base, v.coefs, v.decl, v.dtype, v.space)


@settings(max_examples=400, deadline=None)
@given(_case())
def test_fast_path_gives_the_general_paths_view(case) -> None:
    decl, first, second = case
    with Tracer(Program("t"), load_config(None)).active():
        whole = NkiTensor.whole(decl)
        view = whole._index_basic(first)  # a view whose coefficients are not the identity
        expected = _general(view, second)
        if view_key(second) is not None:
            got = basic_index(view.shape, view.base, view.coefs, second)
            if got is not None:
                assert ("view", *got[:3], decl, view.dtype, view.space) == expected
        for _ in range(2):  # the second time from the view cache
            try:
                child = view[second]
            except SimulatorError as e:
                assert ("error", type(e), e.message) == expected
                continue
            assert _geometry(child) == expected
            # a view known to be inside its tensor skips the bounds check: it must pass it
            parent = whole[first]  # (the fast path marks what it knows to be inside)
            grandchild = parent[second]
            assert _geometry(grandchild) == expected
            for v in (parent, grandchild):
                assert not v._inside or v.out_of_bounds() is None


def test_view_key_tells_bools_and_floats_from_ints() -> None:
    """``True == 1`` and ``1.0 == 1`` hash alike; a cached view must never answer for them."""
    assert view_key((1, slice(0, 2))) == (1, (0, 2, None))
    for key in ((True,), (np.int64(1),), (slice(0, 2.0),), (slice(np.int64(0), 2),),
                (None,), (Ellipsis,)):
        assert view_key(key) is None


def test_cached_view_does_not_hide_a_bad_index() -> None:
    decl = TensorDecl(0, "t", MemSpace.SBUF, (4, 8), float32)
    with Tracer(Program("t"), load_config(None)).active():
        t = NkiTensor.whole(decl)
        assert t[1] is t[1]  # cached
        assert t[1, 0:2] is t[1, 0:2]
        # only whole views cache (a view of a view is built again): the cache stays bounded
        assert t[1][0:2] is not t[1][0:2]
        with pytest.raises(SimulatorError, match="expected an int, slice"):
            t[1, True]  # (a lone t[True] is a mask subscript that keeps all: mask_view.py)
        assert t[True] is t
        with pytest.raises(SimulatorError, match="expected integer bounds"):
            t[1, 0:2.0]


def test_whole_views_keep_few_views_of_hbm_tensors() -> None:
    """A whole view caches the views it hands out, up to VIEW_CACHE_SIZE for a tile and
    HBM_VIEW_CACHE_SIZE for an HBM tensor (indexed with ever new slices: its cache would only
    hold memory); the latest views stay cached."""
    from neuroncore_sim.frontend.index.basic_index import HBM_VIEW_CACHE_SIZE, VIEW_CACHE_SIZE

    with Tracer(Program("t"), load_config(None)).active():
        for space, bound in ((MemSpace.HBM, HBM_VIEW_CACHE_SIZE),
                             (MemSpace.SBUF, VIEW_CACHE_SIZE)):
            whole = NkiTensor.whole(TensorDecl(0, "t", space, (128, 4096), float32))
            views = [whole[:, i:i + 2] for i in range(bound + 10)]
            assert len(whole._views) == bound
            assert whole[:, bound + 9:bound + 11] is views[-1]
            assert whole[:, 0:2] is not views[0]  # (dropped first)
