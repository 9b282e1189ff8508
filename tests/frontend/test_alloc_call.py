"""How allocation functions are called: by the documented keywords (idx, pdim_size, fdim_size)
when they take them, so ``functools.partial(f, bank_map=...)`` of
``f(bank_map, idx, pdim_size, fdim_size)`` works, else positionally; a function that takes
neither is a clear error."""

from __future__ import annotations

import functools

import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import KernelError


def _bank(bank_map, idx, pdim_size, fdim_size):
    return (bank_map[idx], 0, 0)


def test_partial_with_a_leading_keyword_argument():
    def k():
        t = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, name="acc",
                       buffer=ncc.psum.alloc(functools.partial(
                           _bank, bank_map={(0,): 3, (1,): 6})))
        t[0] = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        t[1] = nl.zeros((128, 512), nl.float32, buffer=nl.psum)

    program = ncs.trace(k).program
    acc = next(t for t in program.tensors if t.name == "acc")
    assert [addr // TRN1.psum_bank_bytes for _, addr in acc.placement.tiles] == [3, 6]


def test_positional_functions_still_work_and_bad_signatures_fail():
    def k():
        nl.ndarray((nl.par_dim(128), 64), dtype=nl.float32,
                   buffer=ncc.sbuf.alloc(lambda i, p, f: (0, 0)))

    ncs.trace(k)

    def bad():
        nl.ndarray((nl.par_dim(128), 64), dtype=nl.float32,
                   buffer=ncc.sbuf.alloc(lambda i, p: (0, 0)))

    with pytest.raises(KernelError, match=r"the allocation function must take \(idx, pdim_size, "
                       r"fdim_size\); found signature \(i, p\)"):
        ncs.trace(bad)
