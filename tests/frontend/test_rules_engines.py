"""More NKI rules the front end enforces (issue 4 audit): operand layout, memory spaces per engine,
per-instruction sizes and dtypes. Each bad kernel raises the exact error at its ``# BAD`` line;
the nearest correct kernel runs.

Rules and limits: shared/arch.md sections 1.4, 1.5, 2 and 3.
"""

from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim.errors import AccessError, DTypeError, MemorySpaceError, ShapeError, \
    UnsupportedError
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

F32 = np.float32
HERE = os.path.basename(__file__)


def bad_loc(kernel) -> str:
    """``file.py:LINE`` of the kernel line marked ``# BAD``."""
    src, start = inspect.getsourcelines(kernel)
    return f"{HERE}:{start + next(i for i, s in enumerate(src) if '# BAD' in s)}"


def expect_error(cls, message: str, kernel, *args):
    """Tracing ``kernel`` raises exactly ``cls`` with ``message`` at the ``# BAD`` line."""
    with pytest.raises(cls) as info:
        ncs.trace(kernel, *args)
    assert type(info.value) is cls
    assert info.value.loc == bad_loc(kernel), str(info.value)
    assert re.search(message, info.value.message), info.value.message


def z(*shape, dtype=F32):
    return np.zeros(shape, dtype)


def test_partition_dim_must_be_the_first_axis_of_an_operand():
    def bad():
        t = nl.zeros((64, 32), nl.float32)
        i_f, i_p = nl.mgrid[0:32, 0:64]
        nl.exp(t[i_p, i_f])  # BAD  (view axis 0 walks the free dim)

    def good():
        t = nl.zeros((64, 32), nl.float32)
        i_p, i_f = nl.mgrid[0:64, 0:32]
        nl.exp(t[i_p, i_f])

    expect_error(AccessError, r"activation data: the first axis of a tile operand must be its "
                 r"partition dim", bad)
    ncs.trace(good)


def test_two_element_wise_operands_cannot_both_be_in_psum():
    def bad():
        p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        q = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        nisa.tensor_tensor(p, q, nl.add)  # BAD

    def bad_stt():
        p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        q = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        nisa.scalar_tensor_tensor(data=p, op0=nl.multiply, operand0=2.0, op1=nl.add,  # BAD
                                  operand1=q)

    def good():
        p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        q = nl.zeros((128, 64), nl.float32)
        nisa.tensor_tensor(p, q, nl.add)
        nisa.scalar_tensor_tensor(data=p, op0=nl.multiply, operand0=2.0, op1=nl.add, operand1=q)

    expect_error(MemorySpaceError, r"tensor_tensor: at most one operand may be in psum, found "
                 r"two", bad)
    expect_error(MemorySpaceError, r"scalar_tensor_tensor: data and operand1 cannot both be in "
                 r"psum", bad_stt)
    ncs.trace(good)


def test_dma_engines_cannot_reach_psum():
    def bad(a):
        p = nl.ndarray((128, 64), nl.float32, buffer=nl.psum)
        nisa.dma_copy(dst=p, src=a)  # BAD

    def bad_transpose():
        p = nl.zeros((64, 32), nl.float32, buffer=nl.psum)
        nisa.dma_transpose(p)  # BAD

    def good(a):
        s = nl.ndarray((128, 64), nl.float32)
        nisa.dma_copy(dst=s, src=a)
        nisa.dma_transpose(s[0:64, 0:32])

    expect_error(MemorySpaceError, r"dma_copy dst: DMA engines reach hbm and sbuf; found psum",
                 bad, z(128, 64))
    expect_error(MemorySpaceError, r"dma_transpose src: expected a tensor in hbm or sbuf, found "
                 r"psum", bad_transpose)
    ncs.trace(good, z(128, 64))


def test_compute_engines_cannot_read_hbm():
    def bad(a):
        nl.exp(a)  # BAD

    def bad_isa(a):
        nisa.activation(nl.exp, a)  # BAD

    def good(a):
        nl.exp(nl.load(a))
        nisa.activation(nl.exp, nl.load(a))

    expect_error(MemorySpaceError, r"nl.exp: expected a tile in sbuf or psum, found a tensor in "
                 r"hbm \(load it with nl.load first\)", bad, z(128, 64))
    expect_error(MemorySpaceError, r"activation data: expected a tensor in sbuf or psum, found "
                 r"hbm", bad_isa, z(128, 64))
    ncs.trace(good, z(128, 64))


def test_matmul_operands_are_float_2d_tiles():
    def bad_dtype(a, b):
        nisa.nc_matmul(nl.load(a), nl.load(b))  # BAD

    def bad_rank():
        s = nl.zeros((128, 2, 4), nl.float32)
        m = nl.zeros((128, 8), nl.float32)
        nisa.nc_matmul(s, m)  # BAD

    def good(a, b):
        nisa.nc_matmul(nl.load(a), nl.load(b))

    ints = z(128, 16, dtype=np.int32)
    expect_error(DTypeError, r"nc_matmul stationary: expected a TensorE input dtype .*found int32",
                 bad_dtype, ints, z(128, 16))
    expect_error(ShapeError, r"nc_matmul stationary: expected a 2-D tile \[K, F\], found "
                 r"\[128, 2, 4\]", bad_rank)
    ncs.trace(good, z(128, 16, dtype=ncs.dtypes.bfloat16), z(128, 16))


def test_tensor_engine_transpose_at_most_128x128():
    def bad(a):
        nisa.nc_transpose(nl.load(a), engine=nisa.tensor_engine)  # BAD

    def good(a):
        nisa.nc_transpose(nl.load(a[:, 0:128]), engine=nisa.tensor_engine)

    expect_error(ShapeError, r"nc_transpose on TensorE: expected at most 128x128, found "
                 r"128x129", bad, z(128, 129))
    ncs.trace(good, z(128, 129))


def test_transpose_runs_on_tensor_or_vector_engine_only():
    def bad(a):
        nisa.nc_transpose(nl.load(a), engine=nisa.scalar_engine)  # BAD

    def good(a):
        nisa.nc_transpose(nl.load(a), engine=nisa.vector_engine)

    expect_error(UnsupportedError, r"nc_transpose: engine must be tensor or vector, found scalar",
                 bad, z(32, 32))
    ncs.trace(good, z(32, 32))
