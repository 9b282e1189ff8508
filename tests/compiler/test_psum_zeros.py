"""Which PSUM zero memsets the timing model folds into the matmuls that follow them
(psum_zeros.py): hand-built programs for each case, and a hypothesis property against an
element-by-element reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from programs import Builder, acc

from neuroncore_sim.compiler.psum_zeros import folded_psum_zeros

ALL = slice(None)


class Tile:
    """A [rows, cols] fp32 PSUM tile and helpers that append instructions touching it."""

    def __init__(self, rows: int = 128, cols: int = 1024) -> None:
        self.b = Builder()
        self.ps = self.b.tensor("ps", (rows, cols), "float32", "psum", site=1)
        self.st = self.b.tensor("st", (128, 128), "bfloat16", "sbuf", site=2)
        self.mv = self.b.tensor("mv", (128, 512), "bfloat16", "sbuf", site=3)
        self.sb = self.b.tensor("sb", (rows, cols), "float32", "sbuf", site=4)

    def zero(self, *idx, value=0):
        return self.b.op("memset", "vector", out=acc(self.ps, *idx), attrs={"value": value}).id

    def matmul(self, *idx, accumulate=True):
        self.b.matmul(acc(self.ps, *idx), acc(self.st), acc(self.mv), accumulate=accumulate)

    def read(self, *idx):
        self.b.op("tensor_copy", "vector", out=acc(self.sb, *idx), src=acc(self.ps, *idx))

    def write(self, *idx):
        self.b.op("tensor_copy", "vector", out=acc(self.ps, *idx), src=acc(self.sb, *idx))

    def folded(self) -> set[int]:
        return folded_psum_zeros(self.b.program.instructions)


def bank(k: int) -> tuple[slice, slice]:
    return ALL, slice(512 * k, 512 * (k + 1))


def test_each_bank_started_by_its_own_matmul_folds_the_memset():
    t = Tile()
    m = t.zero()
    for k in (1, 0, 1, 0):  # any order; the second matmul of a bank adds to started elements
        t.matmul(*bank(k))
    t.read()
    assert t.folded() == {m}


def test_row_halves_started_separately_fold_the_memset():
    t = Tile(cols=512)
    m = t.zero()
    t.matmul(slice(0, 64), ALL)
    t.read(slice(0, 64), ALL)  # started elements may be read while others are still zero
    t.matmul(slice(64, 128), ALL)
    assert t.folded() == {m}


def test_separate_memsets_of_two_banks_fold_independently():
    t = Tile()
    m0, m1 = t.zero(*bank(0)), t.zero(*bank(1))
    t.matmul(*bank(1))
    t.matmul(*bank(0))
    assert t.folded() == {m0, m1}


def test_a_matmul_over_started_and_unstarted_elements_keeps_the_memset():
    t = Tile()
    t.zero()
    t.matmul(ALL, slice(0, 512))
    t.matmul(ALL, slice(256, 768))  # cannot both start a group and add
    t.matmul(ALL, slice(768, 1024))
    assert t.folded() == set()


def test_a_matmul_reaching_outside_the_zeroed_region_keeps_the_memset():
    t = Tile()
    t.zero(ALL, slice(0, 256))
    t.matmul(*bank(0))
    assert t.folded() == set()


def test_a_bank_never_written_by_a_matmul_keeps_the_memset():
    t = Tile()
    t.zero()
    t.matmul(*bank(0))
    assert t.folded() == set()


def test_other_first_touches_keep_the_memset():
    for first in ("read", "write", "overwrite", "nonzero"):
        t = Tile()
        t.zero(value=1 if first == "nonzero" else 0)
        if first == "read":
            t.read(slice(0, 1), slice(700, 701))  # one element of bank 1
        elif first == "write":
            t.write(*bank(1))
        elif first == "overwrite":
            t.matmul(*bank(1), accumulate=False)
        t.matmul(*bank(0))
        t.matmul(*bank(1))
        assert t.folded() == set(), first


def test_strided_boxes_never_fold():
    # Bounding boxes are exact only for dense accesses: a strided memset or matmul whose box
    # matches the other's still leaves elements zeroed-but-unstarted or unzeroed-but-started.
    t = Tile(cols=512)
    t.zero(ALL, slice(0, 512, 2))  # box: columns 0..510
    t.matmul(ALL, slice(0, 511))
    assert t.folded() == set()
    t = Tile(cols=512)
    t.zero(ALL, slice(0, 511))
    t.matmul(ALL, slice(0, 512, 2))
    assert t.folded() == set()


# --- property: the rectangle bookkeeping agrees with an element-by-element reference ---------

ROWS, COLS = 4, 8
KINDS = ("zero", "matmul", "overwrite", "read", "write")


@st.composite
def boxes(draw):
    r0 = draw(st.integers(0, ROWS - 1))
    c0 = draw(st.integers(0, COLS - 1))
    return r0, draw(st.integers(r0 + 1, ROWS)), c0, draw(st.integers(c0 + 1, COLS))


def reference(ops: list[tuple[str, tuple[int, int, int, int]]]) -> set[int]:
    """Per memset, a boolean map of its still-untouched elements."""
    pending: list[tuple[int, np.ndarray]] = []
    folded: set[int] = set()
    for i, (kind, (r0, r1, c0, c1)) in enumerate(ops):
        box = np.zeros((ROWS, COLS), bool)
        box[r0:r1, c0:c1] = True
        for entry in list(pending):
            m, untouched = entry
            hit = untouched & box
            if not hit.any():
                continue
            pending.remove(entry)
            if kind == "matmul" and (hit == box).all():
                if (untouched & ~box).any():
                    pending.append((m, untouched & ~box))
                else:
                    folded.add(m)
        if kind == "zero":
            pending.append((i, box))
    return folded


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), boxes()), min_size=1, max_size=10))
def test_folding_matches_an_element_reference(ops):
    t = Tile(ROWS, COLS)
    for kind, (r0, r1, c0, c1) in ops:
        idx = (slice(r0, r1), slice(c0, c1))
        if kind == "zero":
            t.zero(*idx)
        elif kind in ("matmul", "overwrite"):
            t.matmul(*idx, accumulate=kind == "matmul")
        else:
            getattr(t, kind)(*idx)
    assert t.folded() == reference(ops)
