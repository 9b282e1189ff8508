"""``NkiTensor.shrink`` (a masked instruction's operands cut to the mask's box) keeps what its
view knew: a part of a view inside its tensor is inside, and a part of a view that passed the
operand checks passes them, so the checks are not run again for every masked instruction."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from neuroncore_sim.config import load_config
from neuroncore_sim.dtypes import float32
from neuroncore_sim.frontend.tensors.tensor import NkiTensor
from neuroncore_sim.frontend.tracer import Tracer
from neuroncore_sim.program.ir import MemSpace, Program, TensorDecl
from neuroncore_sim.frontend.operands import checked_access


@st.composite
def _case(draw: st.DrawFn):
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=2, max_size=3)))
    pa = draw(st.integers(0, len(shape) - 1))
    # a slice view of the tensor (block dims before the partition dim when pa > 0: the layout
    # check fails unless those are sliced to one block)
    starts = [draw(st.integers(0, n - 1)) for n in shape]
    stops = [draw(st.integers(s + 1, n)) for s, n in zip(starts, shape)]
    box = [(lo, draw(st.integers(lo, hi)))
           for lo, hi in ((draw(st.integers(0, b - a)), b - a) for a, b in zip(starts, stops))]
    return shape, pa, starts, stops, box


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_case())
def test_a_part_of_a_checked_view_passes_the_checks(case) -> None:
    shape, pa, starts, stops, box = case
    decl = TensorDecl(0, "t", MemSpace.SBUF, shape, float32, pa)
    with Tracer(Program("t"), load_config(None)).active() as tr:
        view = NkiTensor.whole(decl)[tuple(slice(a, b) for a, b in zip(starts, stops))]
        ok = view.out_of_bounds() is None and view.tile_error() is None
        if ok:
            checked_access(tr, view, "test", "", (MemSpace.SBUF,), None)
            assert view._checked
        part = view.shrink(tuple(box))
        assert part._checked == ok  # (every box drawn lies inside the view)
        if part._checked:
            assert part.out_of_bounds() is None and part.tile_error() is None
        if part._inside:
            assert part.out_of_bounds() is None


def test_a_box_outside_the_view_is_checked_again() -> None:
    decl = TensorDecl(0, "t", MemSpace.SBUF, (128, 64), float32)
    with Tracer(Program("t"), load_config(None)).active() as tr:
        view = NkiTensor.whole(decl)[:, 0:32]
        checked_access(tr, view, "test", "", (MemSpace.SBUF,), None)
        part = view.shrink(((0, 128), (16, 48)))  # past the view's 32 columns
        assert not part._checked and not part._inside
