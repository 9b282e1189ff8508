"""Recorded Programs of small kernels, compared with golden listings (tests/golden/*.txt).

Regenerate after an intended change with ``pytest tests/program/test_golden_programs.py --update-golden``
and review the diff.
"""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt


def add_rows(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[i * 128:(i + 1) * 128, :])
        y = nl.load(b[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=x + y)
    return out


def matmul_acc(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(lhsT.shape[0] // 128):
        acc += nisa.nc_matmul(nl.load(lhsT[k * 128:(k + 1) * 128, :]),
                              nl.load(rhs[k * 128:(k + 1) * 128, :]))
    nl.store(out, value=nl.copy(acc))
    return out


def ragged_softmax(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(x.shape[1])[None, :]
    for i in nl.affine_range((x.shape[0] + 127) // 128):
        rows = i * 128 + i_p < x.shape[0]
        t = nl.load(x[i * 128 + i_p, i_f], mask=rows)
        nl.store(out[i * 128 + i_p, i_f], value=nl.softmax(t, axis=1, mask=rows), mask=rows)
    return out


def top16_and_pick(x, idx):
    """Top-16 per row (max8, match-replace, max8) and one column picked by a runtime offset."""
    vals = nl.ndarray((x.shape[0], 16), dtype=x.dtype, buffer=nl.shared_hbm)
    col = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    top = nl.ndarray((x.shape[0], 16), dtype=x.dtype, buffer=nl.sbuf)
    top[:, 0:8] = nisa.max8(src=t)
    rest = nisa.nc_match_replace8(data=t, vals=top[:, 0:8], imm=-1e30)
    top[:, 8:16] = nisa.max8(src=rest)
    nl.store(vals, top)
    ix, iy = nl.mgrid[0:x.shape[0], 0:1]
    offsets = nl.load(idx)
    nl.store(col, nisa.tensor_copy_dynamic_src(t[ix, offsets[0, 0] + iy]))
    return vals, col


def test_add_rows_program(golden):
    spec = nt.tensor[[256, 64], nl.float32]
    golden("add_rows.txt", ncs.trace(add_rows, spec, spec, functional=False).program.format())


def test_matmul_accumulation_program(golden):
    lhs, rhs = nt.tensor[[256, 128], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16]
    golden("matmul_acc.txt", ncs.trace(matmul_acc, lhs, rhs, functional=False).program.format())


def test_ragged_softmax_program(golden):
    x = np.zeros((200, 32), np.float32)
    golden("ragged_softmax.txt", ncs.trace(ragged_softmax, x, functional=False).program.format())


def test_top16_and_pick_program(golden):
    x, idx = nt.tensor[[128, 64], nl.float32], nt.tensor[[1, 1], nl.int32]
    golden("top16_and_pick.txt",
           ncs.trace(top16_and_pick, x, idx, functional=False).program.format())


def test_functional_and_timing_only_record_the_same_program():
    x = np.random.default_rng(0).random((200, 32), dtype=np.float32)
    a = ncs.trace(ragged_softmax, x).program.format()
    b = ncs.trace(ragged_softmax, x, functional=False).program.format()
    assert a == b
