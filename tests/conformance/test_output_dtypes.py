"""Output dtypes against numpy: an instruction's ``dtype=`` that differs from the tile its result
is assigned into (the result rounds to the instruction's dtype, then to the destination's, as
the reference's "data type to cast the output type to" says), and dtypes of instructions that
write a given ``dst``."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from kernel_checks import expect_error
from neuroncore_sim.errors import DTypeError

from .helpers import run

BF16, F16, F32 = ml_dtypes.bfloat16, np.float16, np.float32
#: values that bfloat16 and float16 round differently (1 + k/1000: 8 and 11 bits of mantissa)
X = (1 + np.arange(64, dtype=np.float32).reshape(8, 8) * 1e-3).astype(np.float32)
CAUSAL = np.tril(np.ones((8, 8), bool))


def _select_into(instr_dtype, buf_dtype):
    def kernel(a):
        out = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        buf = nl.ndarray((8, 8), dtype=buf_dtype, buffer=nl.sbuf)
        i_p, i_f = nl.mgrid[0:8, 0:8]
        buf[...] = nisa.affine_select(pred=(i_p >= i_f), on_true_tile=nl.load(a),
                                      on_false_value=-9984.0, dtype=instr_dtype)
        nl.store(out, value=nl.copy(buf, dtype=nl.float32))
        return out
    return kernel


@pytest.mark.api("nki.isa.affine_select")
@pytest.mark.parametrize("instr,buf", [(BF16, F32), (F32, BF16), (F16, BF16), (BF16, F16)],
                         ids=["bf16-into-fp32", "fp32-into-bf16", "fp16-into-bf16",
                              "bf16-into-fp16"])
def test_an_instruction_dtype_rounds_before_the_destination_dtype(instr, buf):
    want = np.where(CAUSAL, X, -9984.0).astype(F32).astype(instr).astype(buf).astype(F32)
    got = run(_select_into(instr, buf), X)
    np.testing.assert_array_equal(got, want)
    if instr != F32:  # rounding to the destination's dtype alone would give other values
        assert not np.array_equal(got, np.where(CAUSAL, X, -9984.0).astype(buf).astype(F32))


@pytest.mark.api("nki.language.exp")
def test_an_nl_dtype_into_a_wider_tile_keeps_its_rounding():
    def kernel(a):
        out = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        buf = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        buf[...] = nl.multiply(nl.load(a), 1.0, dtype=nl.bfloat16)
        nl.store(out, value=buf)
        return out
    np.testing.assert_array_equal(run(kernel, X), X.astype(BF16).astype(F32))


@pytest.mark.api("nki.isa.affine_select")
def test_an_instruction_dtype_equal_to_the_destination_writes_straight_in():
    """No copy is added when the dtypes agree (one GpSimd instruction and the DMAs)."""
    r = ncs.simulate(_select_into(F32, F32), X, timing=False)
    assert sum(i.opcode.value == "tensor_copy" for i in r.program.instructions) == 1  # nl.copy
    r = ncs.simulate(_select_into(BF16, F32), X, timing=False)
    assert sum(i.opcode.value == "tensor_copy" for i in r.program.instructions) == 2


@pytest.mark.api("nki.isa.tensor_copy_predicated")
def test_a_dtype_other_than_a_given_dst_is_an_error():
    def kernel(a):
        t = nl.load(a)
        dst = nl.zeros((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        pred = nl.zeros((8, 8), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.tensor_copy_predicated(src=t, dst=dst, predicate=pred, dtype=nl.bfloat16)  # BAD
    expect_error(DTypeError, r"tensor_copy_predicated dtype: the result is written into dst; "
                 r"expected float32, found bfloat16", kernel, X)
