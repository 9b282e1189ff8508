"""The IR's construction memos (program/layout.py) give what the general computations give.

Inside a launch, ``Access`` takes its bounds and size from a memo keyed on (row size, offset,
pattern) and ``TensorDecl`` its layout from one keyed on (shape, partition axis); both must agree
with ``bounds`` / ``compute_layout`` on a cold and on a warm memo, and never hand a numpy integer
from one object to another. The memo belongs to one launch: none is active outside, and each
launch starts with an empty one.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from neuroncore_sim.program import ir, layout as ir_layout
from neuroncore_sim.dtypes import float32
from neuroncore_sim.program.ir import Access, MemSpace, TensorDecl


def _decl(shape: tuple[int, ...], pa: int = 0) -> TensorDecl:
    return TensorDecl(0, "t", MemSpace.SBUF, shape, float32, pa)


@st.composite
def _accesses(draw: st.DrawFn) -> tuple[tuple[int, ...], int, int, tuple[tuple[int, int], ...]]:
    """A tensor shape, partition axis, and any affine pattern (negative, zero and row-crossing
    strides, empty dims) with an offset somewhere in or near the tensor."""
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    pa = draw(st.integers(0, len(shape) - 1))
    size = math.prod(shape)
    pattern = tuple(draw(st.lists(st.tuples(st.integers(-2 * size, 2 * size), st.integers(0, 5)),
                                  min_size=0, max_size=3)))
    offset = draw(st.integers(-size, 2 * size))
    return shape, pa, offset, pattern


def _fields(a: Access) -> tuple[int, ...]:
    return a.row_lo, a.row_hi, a.col_lo, a.col_hi, a.size


@settings(max_examples=300, deadline=None)
@given(_accesses())
def test_cached_access_bounds_equal_the_general_computation(case) -> None:
    shape, pa, offset, pattern = case
    t = _decl(shape, pa)
    want = ir_layout.bounds(t.row_size, offset, pattern) + (math.prod(n for _, n in pattern),)
    with ir_layout.geometry_memo():
        cold = Access(t, offset, pattern)
        warm = Access(t, offset, pattern)  # from the memo
    assert _fields(cold) == _fields(warm) == want
    assert (cold.tensor, cold.offset, cold.pattern) == (t, offset, pattern)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=0, max_size=4), st.data())
def test_cached_tensor_layout_equals_the_general_computation(dims, data) -> None:
    shape = tuple(dims)
    pa = data.draw(st.integers(0, len(shape) - 1)) if shape else 0
    want = ir_layout.compute_layout(shape, pa)
    with ir_layout.geometry_memo():
        for _ in range(2):  # cold, then from the memo
            t = _decl(shape, pa)
            assert (t.rows, t.row_size, t.strides) == want
            assert (t.shape, t.partition_axis) == (shape, pa)


def test_numpy_integers_are_not_cached_for_plain_ints() -> None:
    t = _decl((4, 8))
    with ir_layout.geometry_memo():
        a = Access(t, np.int64(8), ((8, 2), (1, 4)))
        b = Access(t, 8, ((8, 2), (1, 4)))
    assert type(a.row_lo) is np.int64  # computed as before the cache existed
    assert all(type(v) is int for v in _fields(b))
    assert _fields(a) == _fields(b) == (1, 3, 0, 4, 8)


def test_unhashable_patterns_still_work() -> None:
    t = _decl((4, 8))
    a = Access(t, 0, [[8, 4], [1, 8]])  # type: ignore[arg-type]
    assert _fields(a) == (0, 4, 0, 8, 32)


def test_ir_objects_stay_frozen() -> None:
    t = _decl((4, 8))
    a = Access(t, 0, ((8, 4), (1, 8)))
    ins = ir.Instruction(0, ir.Opcode.TENSOR_COPY, ir.Engine.VECTOR, {"out": a}, {"src": a}, {})
    for obj, name in ((t, "rows"), (a, "row_lo"), (ins, "id")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, 1)


def test_equal_patterns_share_one_object() -> None:
    t = _decl((4, 8))
    first = ((8, 2), (1, 4))
    again = tuple([(8, 2), (1, 4)])  # equal, another object
    assert again is not first
    with ir_layout.geometry_memo():
        assert Access(t, 0, first).pattern is first
        assert Access(t, 0, again).pattern is first
        odd = ((np.int64(8), 2), (1, 4))  # not remembered: a numpy integer stays where given
        assert Access(t, 8, odd).pattern is odd and Access(t, 8, first).pattern is first


def test_equal_shapes_share_one_object() -> None:
    first, again = (4, 8), tuple([4, 8])
    with ir_layout.geometry_memo():
        assert _decl(first).shape is first and _decl(again).shape is first
        assert _decl(again, 1).shape is again  # another layout: its own
    assert _decl(again).shape is again  # outside a launch nothing is shared


def test_equal_attrs_share_one_dict() -> None:
    """Equal attrs of plain values share the first dict; values equal in Python but not the
    same attr (1, 1.0, True; 0.0, -0.0) and values of other types keep their own."""
    share = ir_layout.shared_attrs
    with ir_layout.geometry_memo():
        first = {"op": "add", "scale": 1.0, "acc": None}
        assert share(first) is first and share(dict(first)) is first
        assert share({"op": "add", "acc": None, "scale": 1.0}) is not first  # order: another
        for one in ({"v": 1}, {"v": 1.0}, {"v": True}, {"v": 0.0}, {"v": -0.0}):
            kept = share(one)
            assert kept is one and share(dict(one)) is one
            assert type(kept["v"]) is type(one["v"]) and str(kept["v"]) == str(one["v"])
        odd = {"v": np.float32(1.0)}
        assert share(odd) is odd and share(dict(odd)) is not odd
        assert share({}) is share({})
    lone = {"op": "add"}
    assert share(lone) is lone  # outside a launch nothing is shared


def test_recorded_instructions_share_attrs() -> None:
    """A launch's instructions with equal attrs hold one dict (read-only, per the IR)."""
    import neuroncore_sim as ncs
    from neuroncore_sim.frontend import language as nl

    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            nl.store(out[i], nl.add(nl.load(a[i]), 1.0))
        return out

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    res = ncs.simulate(kernel, x, functional=True)
    np.testing.assert_array_equal(res.outputs[0], x + 1)
    dicts = {id(ins.attrs): ins.attrs for ins in res.program.instructions}
    assert len(res.program.instructions) == 6  # per row: a load, an add, a store
    assert len(dicts) == 2, dicts  # the DMAs' {"dst_rmw_op": None} and the add's


def test_the_memo_belongs_to_one_launch() -> None:
    """No memo outside a launch; each launch records into a fresh one, gone when it ends."""
    import neuroncore_sim as ncs
    from neuroncore_sim.frontend import language as nl

    seen: list[ir_layout.GeometryMemo] = []

    def kernel(a):
        seen.append(ir_layout.ACTIVE_MEMO.get())
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for _ in range(2):
        np.testing.assert_array_equal(ncs.simulate(kernel, x, timing=False).outputs[0], x)
    assert ir_layout.ACTIVE_MEMO.get() is None
    assert len(seen) == 2 and None not in seen and seen[0] is not seen[1]
    assert seen[0].layouts and seen[0].bounds  # the launch remembered what it computed
