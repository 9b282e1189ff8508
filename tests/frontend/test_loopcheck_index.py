"""The column index of the loop-dependency check (frontend/loopcheck.py) reports exactly what
the plain scan of every rectangle reports: the same warnings, words and order, on random
kernels that write and read blocks and column slices of one tile across the iterations of an
``nl.affine_range`` loop. (The plain scan is written out below: one list of rectangles per
bucket of rows, scanned whole at every read and write.)"""

from __future__ import annotations

import warnings
from unittest import mock

import numpy as np
from hypothesis import example, given, settings, strategies as st

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.frontend import loopcheck

BLOCKS, WIDTH, ITERS = 4, 1024, 4  # a [4, 128, 1024] fp32 tile: 4 blocks of 2 column buckets


@st.composite
def _ops(draw):
    """Per loop body: (write?, block offset from the iteration or fixed block, columns)."""
    out = []
    for _ in range(draw(st.integers(1, 6))):
        c0 = draw(st.sampled_from([0, 64, 448, 512, 960]))
        c1 = draw(st.sampled_from([c0 + 1, c0 + 64, 512, WIDTH]).filter(lambda c: c > c0)
                  | st.integers(c0 + 1, WIDTH))
        out.append((draw(st.booleans()), draw(st.sampled_from(["i", "i+1", "0", "3"])), c0, c1))
    return out


def _kernel(ops, flat=False):
    """The kernel of ``ops`` on a block tile [4, 128, 1024] (a column bucket per block), or
    with ``flat`` on a [128, 4096] tile (512-column buckets: reads may span several)."""
    def kernel(x):
        if flat:
            t = nl.ndarray((nl.par_dim(128), BLOCKS * WIDTH), dtype=nl.float32)
        else:
            t = nl.ndarray((BLOCKS, nl.par_dim(128), WIDTH), dtype=nl.float32)
        src = nl.load(x)
        for i in nl.affine_range(ITERS):
            for k, (write, blk, c0, c1) in enumerate(ops):
                b = {"i": i, "i+1": (i + 1) % BLOCKS, "0": 0, "3": 3}[blk]
                view = (slice(None), slice(b * WIDTH + c0, b * WIDTH + c1)) if flat else \
                    (b, slice(None), slice(c0, c1))
                # writers of three opcodes, so that a warning's words name which one it found
                if write and k % 3 == 0:
                    t[view] = nl.load(x[:, c0:c1])
                elif write and k % 3 == 1:
                    t[view] = nl.copy(src[:, c0:c1])
                elif write:
                    t[view] = nl.exp(src[:, c0:c1])
                else:
                    nl.multiply(t[view], 2.0)
        return x
    return kernel


def _plain_carried_write(live, cols, a, ins):
    """The read check without the column index: every rectangle of the rows, in order."""
    r_lo, r_hi, c_lo, c_hi = a.row_lo, a.row_hi, a.col_lo, a.col_hi
    if r_hi <= r_lo:
        return None
    tid, size = a.tensor.id, loopcheck._bucket_size(a)
    for b in range(r_lo // size, (r_hi - 1) // size + 1):
        for w in live.get((tid, b), ()):
            if not (c_lo < w.c_hi and w.c_lo < c_hi and w.r_lo < r_hi and r_lo < w.r_hi):
                continue
            if w.ins.loops == ins.loops:
                continue
            over = next(((wl[0], wl[1], rl[1]) if wl[0] == rl[0] else None
                         for wl, rl in zip(w.ins.loops, ins.loops) if wl != rl), None)
            if over is None or loopcheck._is_reduction(w.ins, ins):
                continue
            if loopcheck._elements_meet(w, a):
                return w, over
    return None


def _plain_record(live, cols, a, ins, exact_of):
    """The write without the column index: rebuild the rows' list of rectangles."""
    r_lo, r_hi, c_lo, c_hi = a.row_lo, a.row_hi, a.col_lo, a.col_hi
    if r_hi <= r_lo:
        return
    tid, size = a.tensor.id, loopcheck._bucket_size(a)
    for b in range(r_lo // size, (r_hi - 1) // size + 1):
        lo, hi = b * size, (b + 1) * size
        new = loopcheck._Write(max(r_lo, lo), min(r_hi, hi), c_lo, c_hi, a, ins)
        kept = []
        for w in live.get((tid, b), ()):
            if loopcheck._exact(a):
                kept.extend(loopcheck._subtract(w, a) if not (
                    r_lo <= w.r_lo and w.r_hi <= r_hi and c_lo <= w.c_lo and w.c_hi <= c_hi)
                    else [])
            elif not (w.access.offset == a.offset and w.access.pattern == a.pattern):
                kept.append(w)
        live[(tid, b)] = kept + [new]


def _warnings(ops, flat=False) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = ncs.trace(_kernel(ops, flat), np.zeros((128, WIDTH), np.float32),
                            functional=False).program
    return [str(w) for w in loopcheck.loop_carried_reads(program)]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(_ops())
# a read of one column bucket meeting two carried writes: the first in the plain order is named
@example([(False, "0", 0, 512), (True, "0", 0, 64), (True, "0", 448, 512)])
@example([(False, "0", 0, 512), (True, "0", 448, 512), (True, "0", 0, 64)])
@example([(False, "i+1", 0, 1024), (True, "i", 0, 64), (True, "i", 448, 1000)])
def test_column_index_reports_what_the_plain_scan_reports(ops) -> None:
    for flat in (False, True):
        indexed = _warnings(ops, flat)
        with mock.patch.object(loopcheck, "_carried_write", _plain_carried_write), \
                mock.patch.object(loopcheck, "_record", _plain_record):
            plain = _warnings(ops, flat)
        assert indexed == plain, flat


def test_a_carried_block_read_is_reported() -> None:
    """(The kernels above do carry: reading block i+1, written by the next iteration.)"""
    found = _warnings([(False, "i+1", 0, 64), (True, "i", 0, WIDTH)])
    assert len(found) == 1 and "nl.affine_range" in found[0]
