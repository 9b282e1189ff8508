"""NKI 2.2x declares its ``nki.isa`` instructions (and ``nl.load`` / ``nl.store``) with
``**kwargs``, and real kernels label instructions with ``name="..."``: every instruction takes
``name=``; any other keyword an instruction does not take is a KernelError at the kernel's
line (not Python's TypeError from inside the package)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import KernelError


@nki.jit
def labelled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a, name="a_tile")
    total = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    scaled = nisa.tensor_scalar_reduce(data=t, op0=np.multiply, operand0=2.0,
                                       reduce_op=np.add, reduce_res=total, name="reduced")
    shifted = nisa.tensor_scalar(scaled, np.add, total, name="shifted")
    e = nisa.activation(np.exp, shifted, scale=0.0, name="ones")
    nl.store(out, value=nisa.tensor_copy(e, name="copied"), name="store_out")
    return out


def test_instructions_take_a_name() -> None:
    a = np.random.default_rng(0).random((128, 64)).astype(np.float32)
    res = ncs.simulate(labelled, a, timing=False)
    np.testing.assert_allclose(res.outputs[0], np.ones_like(a))


def test_every_instruction_signature_shows_name() -> None:
    for fname in ("nc_matmul", "activation", "tensor_tensor", "tensor_copy", "memset", "iota",
                  "dma_copy", "tensor_copy_dynamic_src", "select_reduce"):
        assert "name" in inspect.signature(getattr(nisa, fname)).parameters, fname


def test_an_unknown_keyword_is_a_kernel_error_at_the_line() -> None:
    @nki.jit
    def bad(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, value=nisa.tensor_copy(t, egnine=nisa.vector_engine))
        return out

    with pytest.raises(KernelError, match=r"test_instruction_keywords.py:\d+: "
                                          r"nisa.tensor_copy: .*'egnine'.*it takes: src"):
        ncs.simulate(bad, np.zeros((128, 4), np.float32), timing=False)


def test_a_name_that_is_not_a_string_is_a_kernel_error() -> None:
    @nki.jit
    def bad(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_copy(nl.load(a), name=3))
        return out

    with pytest.raises(KernelError, match=r"nisa.tensor_copy: name= expected a string, "
                                          r"found int"):
        ncs.simulate(bad, np.zeros((128, 4), np.float32), timing=False)


def test_a_type_error_from_inside_an_instruction_is_not_relabelled() -> None:
    # A call that fits the signature but fails deeper keeps the error it had (here a
    # KernelError about the operand; the wrapper only judges the call's shape).
    @nki.jit
    def bad(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_copy("not a tile"))
        return out

    with pytest.raises(KernelError, match=r"tensor_copy src: expected a tile, found str"):
        ncs.simulate(bad, np.zeros((128, 4), np.float32), timing=False)


def test_a_zero_grid_dimension_runs_once_with_a_warning() -> None:
    @nki.jit
    def copy(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out

    a = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    with pytest.warns(ncs.errors.SimulatorWarning, match=r"launch grid \[0\] has a dimension "
                                                           r"of 0: simulated as one instance"):
        out = copy[0](a)
    np.testing.assert_array_equal(out, a)


def test_a_negative_grid_dimension_is_an_error() -> None:
    @nki.jit
    def copy(a):
        return a

    with pytest.raises(KernelError, match=r"grid: expected positive integers, found -1"):
        copy[-1](np.zeros((2, 2), np.float32))
