"""``nl`` math: element-wise functions, reductions and composite ops, lowered to ``nisa``.

Lowering policy (the compiler's choice is not documented; docs/model.md records ours):
- tile (op) tile of one shape -> ``tensor_tensor`` on VectorE (GpSimd for power / int32
  arithmetic, as the ALU table says);
- tile (op) scalar or per-partition [P, 1] / [P] tile -> ``tensor_scalar`` on VectorE;
- shapes meet partition-aligned (broadcast.py); a one-partition operand is first copied to all
  partitions (:func:`partition_broadcast`: TensorE for floats, a DMA otherwise);
- transcendental / unary functions -> ``activation`` on ScalarE;
- reductions over free axes -> ``tensor_reduce`` on VectorE;
- ``softmax``, ``rms_norm``, ``mean``, ``var`` -> short sequences of the above.
"""

from __future__ import annotations

import builtins
import itertools
import math
from typing import Any

import numpy as np

from ...dtypes import cast, float32, is_float, promote, promote_scalar, to_dtype
from ...errors import KernelError, MemorySpaceError, ShapeError, UnsupportedError
from ...program.ir import MemSpace
from ..isa import compute as nisa  # (the instructions themselves, not the nisa facade)
from .. import tracer as _tracer
from ..broadcast import broadcast_error, common_shape, expand, padded, relabel
from ..alloc import ndarray
from ..transfer import dma_move
from ..operands import nki_op, not_a_tile, shape_arg
from ..tensors.tensor import NkiTensor

#: The names ``nl`` re-exports (``from .nlmath import *``).
__all__ = [
    "abs", "add", "all", "arctan", "bitwise_and", "bitwise_or", "bitwise_xor", "broadcast_to",
    "expand_dims",
    "ceil", "copy_op", "cos", "divide", "equal", "erf", "erf_dx", "exp", "floor", "fmod", "gelu",
    "gelu_apprx_sigmoid", "gelu_apprx_tanh", "gelu_dx", "greater", "greater_equal", "invert",
    "left_shift", "less", "less_equal", "log", "logical_and", "logical_not", "logical_or",
    "logical_xor", "max", "maximum", "mean", "min", "minimum", "mish", "mod", "multiply",
    "negative", "not_equal", "power", "prod", "reciprocal", "relu", "right_shift", "rms_norm",
    "rsqrt", "sigmoid", "sign", "silu", "silu_dx", "sin", "softmax", "softplus", "sqrt", "square",
    "static_cast", "subtract", "sum", "tan", "tanh", "trunc", "var", "where",
]

_COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "equal", "not_equal",
                          "logical_and", "logical_or", "logical_xor", "bitwise_and",
                          "bitwise_or", "bitwise_xor"})


def _check_on_chip(t: NkiTensor, what: str) -> None:
    if t.space is MemSpace.HBM:
        raise _tracer.current().fail(
            MemorySpaceError, f"{what}: expected a tile in sbuf or psum, found a tensor in hbm "
            "(load it with nl.load first)")


def _is_column(t: NkiTensor, shape: tuple[int, ...]) -> bool:
    """True when ``t`` holds one value per partition of a ``shape`` with free elements."""
    return builtins.all(n == 1 for n in t.shape[1:]) and builtins.any(n != 1 for n in shape[1:])


def _aligned(t: NkiTensor, shape: tuple[int, ...], other: Any) -> NkiTensor:
    """``t`` on ``shape``'s partitions (copied there when it has one) and with its rank. A
    one-partition fp32 row meeting an SBUF ``other`` is broadcast as ``nl.broadcast_to`` does
    it: the matmul's PSUM result, read in place (:func:`_psum_broadcast`)."""
    if padded(t.shape, 1)[0] != shape[0]:
        wide = (shape[0],) + t.shape[1:]
        in_place = None
        if not (isinstance(other, NkiTensor) and other.space is MemSpace.PSUM):
            in_place = _psum_broadcast(_tracer.current("partition broadcast"), t, wide)
        t = in_place if in_place is not None else partition_broadcast(t, wide)
    return relabel(t, padded(t.shape, len(shape)))


def binary(name: str, x: Any, y: Any, dtype: Any = None, mask: Any = None) -> Any:
    """``x (name) y`` for tiles and scalars, with NKI's partition-aligned broadcasting
    (broadcast.py) and type promotion."""
    xt, yt = isinstance(x, NkiTensor), isinstance(y, NkiTensor)
    if not xt and not yt:
        raise _tracer.current(f"nl.{name}").fail(
            KernelError, f"nl.{name}: expected at least one tile operand, found "
            f"{type(x).__name__} and {type(y).__name__}")
    for t in (x, y):
        if isinstance(t, NkiTensor):
            _check_on_chip(t, f"nl.{name}")
    if xt and yt:
        out = dtype if dtype is not None else _true_division(name, promote(x.dtype, y.dtype))
        if x.space is MemSpace.PSUM and y.space is MemSpace.PSUM:
            # VectorE reads at most one operand from PSUM: the compiler stages one in SBUF.
            y = nisa.tensor_copy(y)
        if x.shape == y.shape:
            return nisa.tensor_tensor(x, y, name, dtype=out, mask=mask)
        shape = common_shape(x.shape, y.shape)
        if shape is None:
            raise broadcast_error(f"nl.{name}", x.shape, y.shape)
        x, y = _aligned(x, shape, y), _aligned(y, shape, x)
        if _is_column(y, shape):
            return nisa.tensor_scalar(x, name, y, dtype=out, mask=mask)
        if _is_column(x, shape):
            return nisa.tensor_scalar(y, name, x, reverse0=name not in _COMMUTATIVE, dtype=out,
                                      mask=mask)
        what = f"nl.{name}"
        return nisa.tensor_tensor(expand(x, shape, what), expand(y, shape, what), name,
                                  dtype=out, mask=mask)
    tile, scalar, reverse = (x, y, False) if xt else (y, x, name not in _COMMUTATIVE)
    out = dtype if dtype is not None else _true_division(name, promote_scalar(tile.dtype, scalar))
    return nisa.tensor_scalar(tile, name, scalar, reverse0=reverse, dtype=out, mask=mask)


def _true_division(name: str, dt: Any) -> Any:
    """``nl.divide`` is true division: integer operands give a float32 quotient (AWS's resize
    kernel floors ``pos / width`` to get a row; an integer quotient would round it)."""
    return float32 if name == "divide" and not is_float(dt) else dt


def _make_binary(name: str) -> Any:
    def fn(x: Any, y: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> Any:
        return binary(name, x, y, dtype, mask)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Element-wise ``{name}`` of tiles and/or scalars (VectorE)."
    return nki_op(name)(fn)


add, subtract, multiply, divide = (_make_binary(n) for n in
                                   ("add", "subtract", "multiply", "divide"))
maximum, minimum, power, mod, fmod = (_make_binary(n) for n in
                                      ("maximum", "minimum", "power", "mod", "fmod"))
equal, not_equal, greater, greater_equal, less, less_equal = (_make_binary(n) for n in (
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal"))
logical_and, logical_or, logical_xor = (_make_binary(n) for n in
                                        ("logical_and", "logical_or", "logical_xor"))
bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift = (_make_binary(n) for n in (
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"))


def unary(name: str, x: Any, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """``name(x)`` as a ScalarE activation."""
    if not isinstance(x, NkiTensor):
        raise _tracer.current(f"nl.{name}").fail(KernelError, f"nl.{name}: expected a tile, found "
                                     f"{not_a_tile(x)}")
    _check_on_chip(x, f"nl.{name}")
    return nisa.activation(name, x, dtype=dtype, mask=mask)


def _make_unary(name: str) -> Any:
    def fn(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
        return unary(name, x, dtype, mask)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Element-wise ``{name}`` (ScalarE activation)."
    return nki_op(name)(fn)


exp, log, sin, cos, tan, tanh, arctan = (_make_unary(n) for n in (
    "exp", "log", "sin", "cos", "tan", "tanh", "arctan"))
sqrt, rsqrt, sigmoid, relu, softplus, mish, square = (_make_unary(n) for n in (
    "sqrt", "rsqrt", "sigmoid", "relu", "softplus", "mish", "square"))
gelu, gelu_dx, gelu_apprx_tanh, gelu_apprx_sigmoid, silu, silu_dx, erf, erf_dx = (
    _make_unary(n) for n in ("gelu", "gelu_dx", "gelu_apprx_tanh", "gelu_apprx_sigmoid", "silu",
                             "silu_dx", "erf", "erf_dx"))
abs, sign, floor, ceil, trunc = (_make_unary(n) for n in (  # noqa: A001
    "abs", "sign", "floor", "ceil", "trunc"))
copy_op = nki_op("copy")(lambda x: x)  # the identity activation when passed as op=


@nki_op("reciprocal")
def reciprocal(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """``1 / x`` as a ScalarE activation (no bias on NeuronCore-v2)."""
    return unary("reciprocal", x, dtype, mask)


@nki_op("negative")
def negative(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """``-x`` (VectorE: multiply by -1)."""
    if not isinstance(x, NkiTensor):
        raise _tracer.current("nl.negative").fail(
            KernelError, f"nl.negative: expected a tile, found {type(x).__name__}")
    return binary("multiply", x, -1 if not is_float(x.dtype) else -1.0, dtype, mask)


def logical_not(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """``not x`` element-wise (1 where x == 0)."""
    return binary("equal", x, 0, dtype, mask)


def invert(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """Bitwise not of an integer tile."""
    return binary("bitwise_xor", x, -1, dtype, mask)


# --- reductions --------------------------------------------------------------------------------
class _Required:
    """The default of a reduction's ``axis``: NKI requires it (module ``_axis_required``)."""

    def __repr__(self) -> str:
        return "<required>"


_AXIS = _Required()


def _axis_required(what: str, axis: Any) -> None:
    """A KernelError when a reduction is called without ``axis`` (NKI requires it; numpy's
    reduce-everything default has no single instruction on a tile)."""
    if axis is _AXIS:
        raise _tracer.current().fail(
            KernelError, f"nl.{what}: expected axis= (the free axes to reduce, e.g. "
            f"nl.{what}(t, axis=1)), found none: NKI reduces along free axes only; reduce "
            "across partitions with nisa.tensor_partition_reduce or a matmul with a ones vector")


def _reduce(what: str, name: str, x: Any, axis: Any, dtype: Any, keepdims: bool,
            mask: Any) -> NkiTensor:
    """``nl.<what>``: the ``name`` reduction of ``x`` over its free axes ``axis``."""
    _axis_required(what, axis)
    if not isinstance(x, NkiTensor):
        raise _tracer.current().fail(KernelError, f"nl reduction: expected a tile, found "
                                     f"{type(x).__name__}")
    _check_on_chip(x, f"nl reduction ({name})")
    # free axes that are not adjacent (axis=[2, 4]) are reordered last by tensor_reduce itself
    return nisa.tensor_reduce(name, x, axis, dtype=dtype, keepdims=keepdims, mask=mask)


def _axes_size(x: NkiTensor, axis: Any) -> int:
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return math.prod(x.shape[int(a) % x.ndim] for a in axes)


@nki_op("add")
def sum(x: Any, axis: Any = _AXIS, *,
        dtype: Any = None, keepdims: bool = False, mask: Any = None,
        **_: Any) -> NkiTensor:  # noqa: A001
    """Sum over free axes."""
    return _reduce("sum", "add", x, axis, dtype, keepdims, mask)


@nki_op("multiply")
def prod(x: Any, axis: Any = _AXIS, *,
         dtype: Any = None, keepdims: bool = False, mask: Any = None,
         **_: Any) -> NkiTensor:
    """Product over free axes."""
    return _reduce("prod", "multiply", x, axis, dtype, keepdims, mask)


@nki_op("maximum")
def max(x: Any, axis: Any = _AXIS, *,
        dtype: Any = None, keepdims: bool = False, mask: Any = None,
        **_: Any) -> NkiTensor:  # noqa: A001
    """Maximum over free axes."""
    return _reduce("max", "maximum", x, axis, dtype, keepdims, mask)


@nki_op("minimum")
def min(x: Any, axis: Any = _AXIS, *,
        dtype: Any = None, keepdims: bool = False, mask: Any = None,
        **_: Any) -> NkiTensor:  # noqa: A001
    """Minimum over free axes."""
    return _reduce("min", "minimum", x, axis, dtype, keepdims, mask)


def all(x: Any, axis: Any = _AXIS, *,
        dtype: Any = None, keepdims: bool = False, mask: Any = None,
        **_: Any) -> NkiTensor:  # noqa: A001
    """Logical and over free axes."""
    return _reduce("all", "logical_and", x, axis, dtype, keepdims, mask)


def mean(x: Any, axis: Any = _AXIS, *,
         dtype: Any = None, keepdims: bool = False, mask: Any = None,
         **_: Any) -> NkiTensor:
    """Mean over free axes: a sum (in fp32) then a multiply by 1/n."""
    s = _reduce("mean", "add", x, axis, float32, keepdims, mask)
    return nisa.tensor_scalar(s, "multiply", 1.0 / _axes_size(x, axis),
                              dtype=dtype if dtype is not None else x.dtype)


def var(x: Any, axis: Any = _AXIS, *,
        dtype: Any = None, keepdims: bool = False, mask: Any = None, **_: Any) -> NkiTensor:
    """Population variance over free axes: mean of squared deviations. The reference's result
    drops the reduced axes; ``keepdims=True`` (as the other reductions take it) keeps them."""
    _axis_required("var", axis)
    m = mean(x, axis, dtype=float32, keepdims=True, mask=mask)
    d = nisa.tensor_scalar(x, "subtract", m, dtype=float32)
    sq = nisa.tensor_tensor(d, d, "multiply", dtype=float32)
    return mean(sq, axis, dtype=dtype if dtype is not None else x.dtype, keepdims=keepdims)


# --- composites ----------------------------------------------------------------------------------
def _partition_column(p: int) -> NkiTensor:
    """A fresh [p, 1] float32 SBUF tile (an accumulator-register read target)."""
    return ndarray((p, 1), float32)


def softmax(x: Any, axis: Any = -1, *, dtype: Any = None, compute_dtype: Any = None,
            mask: Any = None, **_: Any) -> NkiTensor:
    """Softmax over the free axis: max (VectorE), exp with fused sum (ScalarE), scale."""
    tr = _tracer.current("nl.softmax")
    if not isinstance(x, NkiTensor) or x.ndim != 2 or isinstance(axis, bool) \
            or not isinstance(axis, (int, np.integer)) or int(axis) not in (1, -1):
        raise tr.fail(UnsupportedError, "nl.softmax: expected a 2-D tile reduced along axis 1 "
                      f"(the free axis), found {getattr(x, 'shape', x)} axis {axis}")
    m = nisa.tensor_reduce("maximum", x, 1, keepdims=True, dtype=float32, mask=mask)
    neg_m = nisa.tensor_scalar(m, "multiply", -1.0, dtype=float32, mask=mask)
    total = _partition_column(x.shape[0])
    e = nisa.activation("exp", x, bias=neg_m, reduce_res=total, reduce_cmd="reset_reduce",
                        dtype=float32, mask=mask)
    inv = nisa.reciprocal(total, dtype=float32, mask=mask)
    return nisa.tensor_scalar(e, "multiply", inv, dtype=dtype if dtype is not None else x.dtype,
                              mask=mask)


def rms_norm(x: Any, w: Any, axis: Any, n: Any, epsilon: float = 1e-6, *, dtype: Any = None,
             compute_dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """``x / sqrt(mean(x^2) + epsilon) * w`` over the free axis of a 2-D tile."""
    tr = _tracer.current("nl.rms_norm")
    if not isinstance(x, NkiTensor) or x.ndim != 2:
        raise tr.fail(UnsupportedError, f"nl.rms_norm: expected a 2-D tile, found "
                      f"{getattr(x, 'shape', x)}")
    for what, v in (("n", n), ("epsilon", epsilon)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or (what == "n" and v <= 0):
            raise tr.fail(KernelError, f"nl.rms_norm: expected {what} a "
                          f"{'positive ' if what == 'n' else ''}number, found {v!r}")
    ss = _partition_column(x.shape[0])
    nisa.activation("square", x, reduce_res=ss, reduce_cmd="reset_reduce", dtype=float32,
                    mask=mask)
    ms = nisa.tensor_scalar(ss, "multiply", 1.0 / float(n), op1="add", operand1=float(epsilon),
                            dtype=float32, mask=mask)
    inv = nisa.activation("rsqrt", ms, dtype=float32, mask=mask)
    y = nisa.tensor_scalar(x, "multiply", inv, dtype=float32, mask=mask)
    return binary("multiply", y, w, dtype if dtype is not None else x.dtype, mask)


def where(condition: Any, x: Any, y: Any, *, dtype: Any = None, mask: Any = None,
          **_: Any) -> NkiTensor:
    """``x`` where ``condition`` is non-zero, else ``y``.

    Lowered as ``x * c + y * (1 - c)`` with ``c`` the condition as 0/1 on VectorE: exact for
    finite values (one product is always exactly 0).
    """
    if not isinstance(condition, NkiTensor):
        raise _tracer.current().fail(KernelError, "nl.where: expected a tile condition, found "
                                     f"{type(condition).__name__}")
    tiles = [t for t in (x, y) if isinstance(t, NkiTensor)]
    out = dtype if dtype is not None else (
        promote(tiles[0].dtype, tiles[-1].dtype) if tiles else float32)
    take_x = binary("not_equal", condition, 0, float32, mask)
    take_y = binary("equal", condition, 0, float32, mask)
    part_x = binary("multiply", take_x, x, float32, mask)
    part_y = binary("multiply", take_y, y, float32, mask)
    return binary("add", part_x, part_y, out, mask)


def static_cast(x: Any, dtype: Any) -> Any:
    """Convert a tile to ``dtype`` (a VectorE copy with an output cast); a scalar or a host
    array (numpy, also outside any kernel, as the docs allow) is converted at once, rounding as
    the engines' output cast does."""
    dt = to_dtype(dtype, "static_cast dtype")
    if isinstance(x, NkiTensor):
        return nisa.tensor_copy(x, dtype=dt)
    values = np.asarray(x)
    if values.dtype.kind not in "biuf" and not is_float(values.dtype):
        msg = (f"static_cast: expected a tile, a number or a numeric array, found "
               f"{type(x).__name__} of dtype {values.dtype}")
        tr = _tracer.active_or_none()
        raise tr.fail(KernelError, msg) if tr is not None else KernelError(msg)
    out = cast(values, dt)
    return out[()] if out.ndim == 0 else out


def expand_dims(data: Any, axis: Any, **_: Any) -> NkiTensor:
    """``nl.expand_dims(data, axis)``: ``data.expand_dims(axis)``, a view with a new size-1 axis."""
    if not isinstance(data, NkiTensor):
        raise _tracer.current("expand_dims").fail(
            KernelError, f"expand_dims: expected a tile, found {type(data).__name__}")
    return data.expand_dims(axis)


def broadcast_to(src: Any, shape: Any, **_: Any) -> NkiTensor:
    """Broadcast a tile to ``shape`` (each dim equal or from 1; a tile with fewer dims gets
    size-1 free dims appended, partition-aligned): free axes by a strided copy (VectorE), one
    partition to many by :func:`partition_broadcast`."""
    tr = _tracer.current("broadcast_to")
    if not isinstance(src, NkiTensor):
        raise tr.fail(KernelError, f"broadcast_to: expected a tile, found {type(src).__name__}")
    shape = shape_arg(shape, "broadcast_to shape")
    if len(shape) < src.ndim:
        raise tr.fail(ShapeError, f"broadcast_to: expected a shape with at least {src.ndim} "
                      f"dims, found {list(shape)}")
    if builtins.any(n not in (1, m) for n, m in zip(padded(src.shape, len(shape)), shape)):
        raise tr.fail(ShapeError, f"broadcast_to: expected each dim of {list(src.shape)} to be "
                      f"1 or the target's, found target {list(shape)}")
    _check_on_chip(src, "broadcast_to")
    if src.shape == shape:  # the reference: "this operation will simply return src"
        return src
    src = relabel(src, padded(src.shape, len(shape)))  # a [P] tile is [P, 1] (partition-aligned)
    if src.shape[0] == shape[0]:
        return nisa.tensor_copy(src.with_shape(shape))
    in_place = _psum_broadcast(tr, src, shape)
    return in_place if in_place is not None else partition_broadcast(src, shape)


def _psum_broadcast(tr: Any, src: NkiTensor, shape: tuple[int, ...]) -> NkiTensor | None:
    """The partition broadcast of a one-partition fp32 SBUF row to a 2-D ``shape`` whose fp32
    result fits one PSUM bank: the matmul's PSUM result is the broadcast tile, read in place by
    its consumer (VectorE / ScalarE read PSUM; a tensor_tensor with one PSUM operand costs N
    instead of 2N), with no copy to SBUF (docs/frontend.md, "broadcast_to"). None otherwise.
    An ``nl`` element-wise call's implicit broadcast is lowered the same way (Autocomp's Mamba
    v6, which multiplies by its one-partition rows implicitly, runs 1.5x faster than v3, which
    calls ``broadcast_to``; copying each row to SBUF made it 9 % slower)."""
    if (len(shape) == 2 and src.shape[1:] == shape[1:] and src.space is MemSpace.SBUF
            and src.dtype == float32
            and shape[1] * src.dtype.itemsize <= tr.config.psum_bytes_per_partition
            // tr.config.psum_num_banks):
        return nisa.nc_matmul(_broadcast_ones(tr, shape[0], src.dtype), src,
                              is_stationary_onezero=True)
    return None


def _broadcast_ones(tr: Any, m: int, dtype: Any) -> NkiTensor:
    """The [1, m] ones stationary of partition broadcasts: a constant, made once per launch
    instance and dtype, as a compiler keeps constants (a memset per broadcast would sit in
    VectorE's queue just before the broadcast's consumer and make it wait for the whole TensorE
    round trip)."""
    key = ("broadcast_ones", tr.instance, m, dtype)
    ones = tr.lang_state.get(key)
    if ones is None:
        loops, tr.loops = tr.loops, ()  # recorded as if hoisted before every loop
        try:
            ones = tr.lang_state[key] = nisa.memset((1, m), 1.0, dtype)
        finally:
            tr.loops = loops
    return ones


def partition_broadcast(src: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
    """A new SBUF tile of ``shape`` holding ``src`` (one partition) on every partition, its
    size-1 free axes broadcast too. Compute engines map partition p to lane p, so this moves
    data: float tiles by TensorE, ``nc_matmul(ones[1, M], src, is_stationary_onezero=True)`` per
    row of at most 512 elements (as the architecture guide describes; exact: each output is
    1.0 times one input), other dtypes (which TensorE does not take) by one SBUF-to-SBUF DMA
    whose source repeats the partition (stride 0)."""
    tr = _tracer.current("partition broadcast")
    if src.space is MemSpace.PSUM:  # TensorE and the DMA queues read SBUF, not PSUM
        src = nisa.tensor_copy(src)
    src = relabel(src, padded(src.shape, 2))  # the matmul's moving operand is [1, F]
    full = padded(shape, 2)
    m = full[0]
    out = ndarray(full, src.dtype)
    wide = src.with_shape(full)  # stride 0 over partitions and over broadcast free axes
    if not is_float(src.dtype):
        dma_move("partition broadcast", out, wide, None, None)
        return relabel(out, shape)
    ones = _broadcast_ones(tr, m, src.dtype)
    step = tr.config.gemm_moving_fmax
    for row in itertools.product(*(range(n) for n in full[1:-1])):
        for lo in range(0, full[-1], step):
            cols = slice(lo, builtins.min(full[-1], lo + step))
            part = nisa.nc_matmul(ones, wide[(slice(0, 1),) + row + (cols,)],
                                  is_stationary_onezero=True)
            out[(slice(None),) + row + (cols,)] = nisa.tensor_copy(part, dtype=src.dtype)
    return relabel(out, shape)
