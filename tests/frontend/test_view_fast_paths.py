"""Front-end fast paths give what the general code gives.

- ``NkiTensor.access`` and ``tile_error`` shortcut views whose map is the identity object of
  ``NkiTensor.whole`` (whole tensors, plain slices of them); a view with an equal map that is
  not that object takes the general path, and both must agree (and match the element formula).
- loopcheck drops an older write rectangle that a new exact write covers without calling
  ``_subtract``: that is what ``_subtract`` gives for it.
- ``Tracer.user_loc`` caches kernel lines by code object and bytecode offset.
- ``basic_index.whole_index`` remembers the geometry of a key on a whole tensor by its shape.
- ``NkiTensor.__setitem__`` returns at once when a view is stored back into itself.
- ``Tracer.lease`` keeps plain weak references to the leases of tiles.
"""

from __future__ import annotations

import gc
import itertools
import sys
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl

from neuroncore_sim.config import load_config
from neuroncore_sim.dtypes import float32
from neuroncore_sim.errors import SimulatorError
from neuroncore_sim.frontend.index import basic_index as bi
from neuroncore_sim.frontend import loopcheck
from neuroncore_sim.frontend.tensors.tensor import NkiTensor
from neuroncore_sim.frontend.tracer import Tracer
from neuroncore_sim.program.ir import Access, MemSpace, Program, TensorDecl


@st.composite
def _views(draw: st.DrawFn) -> tuple[TensorDecl, tuple]:
    """A declared tensor (any partition axis) and a key of plain slices (step 1) of it."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    space = draw(st.sampled_from([MemSpace.SBUF, MemSpace.PSUM, MemSpace.HBM]))
    pa = draw(st.integers(0, len(shape) - 1)) if space is not MemSpace.HBM else 0
    key = []
    for n in shape[:draw(st.integers(0, len(shape)))]:
        lo = draw(st.integers(0, n - 1))
        key.append(slice(lo, draw(st.integers(lo + 1, n))))
    return TensorDecl(0, "t", space, shape, float32, pa), tuple(key)


def _twin(view: NkiTensor) -> NkiTensor:
    """The same view with an equal map that is not the identity object (the general path)."""
    coefs = tuple(tuple(list(row)) for row in view.coefs)
    assert coefs == view.coefs and coefs is not view.coefs
    return NkiTensor(view.decl, view.shape, view.dtype, view.base, coefs, view.space)


def _offsets(acc: Access) -> list[int]:
    return [acc.offset + sum(s * i for (s, _), i in zip(acc.pattern, idx))
            for idx in itertools.product(*(range(n) for _, n in acc.pattern))]


@settings(max_examples=300, deadline=None)
@given(_views())
def test_identity_views_take_the_general_paths_answer(case) -> None:
    decl, key = case
    with Tracer(Program("t"), load_config(None)).active():
        view = NkiTensor.whole(decl)[key] if key else NkiTensor.whole(decl)
        twin = _twin(view)
        fast, general = view.access(), twin.access()
        assert (fast.offset, fast.pattern) == (general.offset, general.pattern)
        assert view.tile_error() == twin.tile_error()
    # and the pattern selects the elements the view's map names, in row-major view order
    expected = []
    for idx in itertools.product(*(range(n) for n in view.shape)):
        declared = [b + sum(c * i for c, i in zip(row, idx))
                    for b, row in zip(view.base, view.coefs)]
        expected.append(sum(s * d for s, d in zip(decl.strides, declared)))
    assert _offsets(fast) == expected


_RECT = st.tuples(st.integers(0, 6), st.integers(1, 4), st.integers(0, 6), st.integers(1, 4))


@settings(max_examples=300, deadline=None)
@given(_RECT, _RECT)
def test_a_write_covering_an_older_rectangle_leaves_nothing_of_it(old, new) -> None:
    t = TensorDecl(0, "t", MemSpace.SBUF, (16, 16), float32)
    r, nr, c, nc = new
    acc = Access(t, r * 16 + c, ((16, nr), (1, nc)))
    w = loopcheck._Write(old[0], old[0] + old[1], old[2], old[2] + old[3], acc, None)
    inside = (acc.row_lo <= w.r_lo and w.r_hi <= acc.row_hi and acc.col_lo <= w.c_lo
              and w.c_hi <= acc.col_hi)
    if inside:
        assert loopcheck._subtract(w, acc) == []


def test_user_loc_names_each_line_of_a_loop_and_of_a_helper() -> None:
    tr = Tracer(Program("t"), load_config(None))

    def helper():
        return tr.user_loc(), sys._getframe().f_lineno  # the helper's line: outside the package

    seen = []
    for _ in range(3):
        seen.append((tr.user_loc(), sys._getframe().f_lineno, helper(), helper()))
    for loc, line, (h1, h1_line), (h2, h2_line) in seen:
        assert (loc.lineno, h1.lineno, h2.lineno) == (line, h1_line, h2_line)
        assert loc.filename == h1.filename == __file__
    assert seen[0][0] is seen[2][0]  # the same SourceLoc object for the same line


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data())
def test_whole_view_geometry_cache_equals_basic_index(dims, data) -> None:
    shape = tuple(dims)
    items = st.one_of(st.integers(-7, 7), st.builds(slice, st.none() | st.integers(-7, 7),
                                                     st.none() | st.integers(-7, 7),
                                                     st.none() | st.integers(-1, 2)))
    key = tuple(data.draw(st.lists(items, max_size=len(shape) + 1)))
    decl = TensorDecl(0, "t", MemSpace.SBUF, shape, float32)
    with Tracer(Program("t"), load_config(None)).active():
        whole = NkiTensor.whole(decl)
    want = bi.basic_index(shape, whole.base, whole.coefs, key)
    memo: dict = {}  # a launch's ViewCache.whole
    for _ in range(2):  # cold, then from the cache
        assert bi.whole_index(shape, whole.base, whole.coefs, key, bi.view_key(key), memo) == want
    assert bi.whole_index(shape, whole.base, whole.coefs, key, bi.view_key(key), None) == want


def test_view_memos_belong_to_one_launch() -> None:
    """Each launch's tracer owns its memos: a new launch starts with empty ones, and nothing
    outlives the launch in a module."""
    import neuroncore_sim as ncs
    import neuroncore_sim.nki.language as nl
    from neuroncore_sim.frontend import tracer as _tracer

    seen = []

    def k(a):
        t = nl.load(a[0:128, 0:64])
        i_p, i_f = nl.mgrid[0:128, 0:32]
        nl.store(a[i_p, i_f], value=t[i_p, i_f])
        seen.append(_tracer.active_or_none().view_cache)

    a = np.zeros((128, 64), np.float32)
    ncs.simulate(k, a, timing=False)
    ncs.simulate(k, a, timing=False)
    first, second = seen
    assert first is not second and first.affine and second.affine


def test_storing_a_view_back_into_itself_records_nothing_and_needs_a_kernel() -> None:
    """``t[i] += x`` ends in ``t[i] = t[i]`` (the same cached view): nothing more is recorded;
    outside a kernel that store is still refused like any other tile assignment."""
    kept = []

    def k(a):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32)
        t[0] = nl.load(a)
        t[1] = t[1]  # (uninitialised, but stored into itself: no instruction)
        t[0] += t[0]  # one tensor_tensor, written in place
        t[0] = t[0]
        nl.store(out, value=t[0])
        kept.append(t)
        return out

    a = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    launch = ncs.trace(k, a)
    assert [i.opcode.value for i in launch.program.instructions] == [
        "dma_copy", "tensor_tensor", "dma_copy"]
    np.testing.assert_array_equal(launch.outputs[0], 2 * a)
    t = kept[0]
    with pytest.raises(SimulatorError, match="inside a kernel"):
        t[0] = t[0]


class _NullBackend:
    """A value backend that keeps nothing (the tracer only needs one to hand out leases)."""

    def declare(self, decl, values) -> None: ...

    def execute(self, ins) -> None: ...

    def read(self, access) -> None: ...

    def release(self, decl) -> None: ...


def test_a_tiles_lease_is_shared_by_its_views_and_its_death_reported_once() -> None:
    tr = Tracer(Program("t"), load_config(None), backend=_NullBackend())
    with tr.active():
        decl = tr.new_tensor(MemSpace.SBUF, (128, 4), float32)
        first, second = NkiTensor.whole(decl), NkiTensor.whole(decl)
        assert first.lease is second.lease is not None
        view = first[0:64]
        del first, second
        assert tr._dead == []  # a view still holds the lease
        del view
        assert tr._dead == [decl] and decl not in tr._leases
        again = NkiTensor.whole(decl)  # a later view gets a new lease
        assert again.lease is not None and tr._leases[decl]() is again.lease
    gone = weakref.ref(tr)
    gc.disable()
    try:
        del tr, again  # no reference cycle: reference counting alone frees the tracer
        assert gone() is None
    finally:
        gc.enable()
