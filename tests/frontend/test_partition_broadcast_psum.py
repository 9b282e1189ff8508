"""A partition broadcast (``tile.broadcast_to``, one partition to many) is a TensorE matmul with
a ones stationary; when its fp32 result fits one PSUM bank it stays there and its consumer
reads it in place (no VectorE copy to SBUF; a tensor_tensor with one PSUM operand costs N
instead of 2N). nl calls whose two operands are both in PSUM stage one in SBUF."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import MemorySpaceError

from programs import AS_WRITTEN


def scale_rows(x, row):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t, r = nl.load(x), nl.load(row)
    nl.store(out, value=nisa.tensor_tensor(t, r.broadcast_to(x.shape), op=nl.multiply))
    return out


def square_of_broadcast(x, row):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    r = nl.load(row)
    b1, b2 = r.broadcast_to(x.shape), r.broadcast_to(x.shape)
    nl.store(out, value=nl.multiply(b1, b2))
    return out


def isa_two_psum(x, row):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    r = nl.load(row)
    b1, b2 = r.broadcast_to(x.shape), r.broadcast_to(x.shape)
    nl.store(out, value=nisa.tensor_tensor(b1, b2, op=nl.multiply))  # ISA_TWO_PSUM
    return out


def _inputs(f, dtype=np.float32):
    rng = np.random.default_rng(1)
    return rng.random((128, f)).astype(dtype), rng.random((1, f)).astype(dtype)


def _vector_ops(res):
    ev = res.events
    return list(ev[ev.engine == "vector"].opcode)


def test_fp32_broadcast_is_read_from_psum() -> None:
    x, row = _inputs(512)
    res = ncs.simulate(scale_rows, x, row, config=AS_WRITTEN)
    np.testing.assert_array_equal(res.outputs[0], x * row)
    # memset of the ones, then one tensor_tensor reading PSUM: N = 512 cycles, no copy.
    assert _vector_ops(res) == ["memset", "tensor_tensor"]
    ev = res.events
    tt = ev[ev.opcode == "tensor_tensor"].iloc[0]
    assert tt.end_ns - tt.start_ns == pytest.approx(512 / 1.12)


def test_wide_or_bf16_broadcast_is_copied_to_sbuf() -> None:
    x, row = _inputs(1024)  # 4 KiB of fp32 per partition: two PSUM banks
    res = ncs.simulate(scale_rows, x, row, config=AS_WRITTEN)
    np.testing.assert_array_equal(res.outputs[0], x * row)
    assert _vector_ops(res).count("tensor_copy") == 2
    xb, rb = _inputs(512, ml_dtypes.bfloat16)  # bf16 keeps its dtype: copied out of PSUM
    res = ncs.simulate(scale_rows, xb, rb, config=AS_WRITTEN)
    assert res.outputs[0].dtype == np.dtype(ml_dtypes.bfloat16)
    assert "tensor_copy" in _vector_ops(res)


def test_nl_call_on_two_psum_tiles_stages_one() -> None:
    x, row = _inputs(256)
    res = ncs.simulate(square_of_broadcast, x, row, config=AS_WRITTEN)
    np.testing.assert_allclose(res.outputs[0], np.broadcast_to(row * row, x.shape), rtol=1e-6)


def test_isa_call_on_two_psum_broadcasts_is_a_clear_error() -> None:
    x, row = _inputs(256)
    with pytest.raises(MemorySpaceError, match=r"test_partition_broadcast_psum.py:\d+.*psum"):
        ncs.simulate(isa_two_psum, x, row, config=AS_WRITTEN)


def broadcast_in_loop(x, rows):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows.shape[0]):
        t, r = nl.load(x[i * 128:(i + 1) * 128, :]), nl.load(rows[i:i + 1, :])
        nl.store(out[i * 128:(i + 1) * 128, :],
                 value=nisa.tensor_tensor(t, r.broadcast_to((128, x.shape[1])), op=nl.add))
    return out


def test_ones_stationary_is_one_constant() -> None:
    """The ones of every broadcast are one memset, recorded outside the loops (no loop-carried
    dependency warning), so VectorE does not wait for TensorE after each memset."""
    import warnings

    rng = np.random.default_rng(2)
    x = rng.random((512, 256)).astype(np.float32)
    rows = rng.random((4, 256)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = ncs.simulate(broadcast_in_loop, x, rows, config=AS_WRITTEN)
    np.testing.assert_array_equal(res.outputs[0], x + np.repeat(rows, 128, axis=0))
    assert _vector_ops(res).count("memset") == 1


def implicit_scale(x, row):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t, r = nl.load(x), nl.load(row)
    nl.store(out, value=nl.multiply(t, r))  # [128, F] x [1, F]: an implicit partition broadcast
    return out


def implicit_with_psum_operand(x, row):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    r = nl.load(row)
    b = r.broadcast_to(x.shape)  # in PSUM: the implicit broadcast below must not be a 2nd one
    nl.store(out, value=nl.add(b, r))
    return out


def test_implicit_broadcast_is_read_from_psum_as_broadcast_to() -> None:
    """An nl element-wise call's implicit partition broadcast is lowered as ``broadcast_to``:
    the fp32 row fitting one bank stays in PSUM (Autocomp's Mamba v6). Without it: a copy to
    SBUF and a tensor_tensor of two SBUF operands (2N)."""
    x, row = _inputs(512)
    res = ncs.simulate(implicit_scale, x, row, config=AS_WRITTEN)
    np.testing.assert_array_equal(res.outputs[0], x * row)
    assert _vector_ops(res) == ["memset", "tensor_tensor"]
    tt = res.events[res.events.opcode == "tensor_tensor"].iloc[0]
    assert tt.end_ns - tt.start_ns == pytest.approx(512 / 1.12)
    xw, roww = _inputs(1024)  # two banks: copied to SBUF bank by bank, as broadcast_to
    res = ncs.simulate(implicit_scale, xw, roww, config=AS_WRITTEN)
    np.testing.assert_array_equal(res.outputs[0], xw * roww)
    assert _vector_ops(res).count("tensor_copy") == 2


def test_implicit_broadcast_next_to_a_psum_operand_goes_to_sbuf() -> None:
    x, row = _inputs(256)
    res = ncs.simulate(implicit_with_psum_operand, x, row, config=AS_WRITTEN)
    np.testing.assert_allclose(res.outputs[0], np.broadcast_to(row + row, x.shape), rtol=1e-6)
    assert "tensor_copy" in _vector_ops(res)  # the implicit broadcast's row, copied to SBUF
