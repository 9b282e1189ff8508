"""``nl`` math: element-wise functions, reductions and composite ops, lowered to ``nisa``.

Lowering policy (the compiler's choice is not documented; docs/model.md records ours):
- tile (op) tile of one shape -> ``tensor_tensor`` on VectorE (GpSimd for power / int32
  arithmetic, as the ALU table says);
- tile (op) scalar or per-partition [P, 1] tile -> ``tensor_scalar`` on VectorE;
- transcendental / unary functions -> ``activation`` on ScalarE;
- reductions over free axes -> ``tensor_reduce`` on VectorE;
- ``softmax``, ``rms_norm``, ``mean``, ``var`` -> short sequences of the above.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from ..dtypes import float32, is_float, promote, promote_scalar, to_dtype
from ..errors import KernelError, MemorySpaceError, ShapeError, UnsupportedError
from ..program.ir import MemSpace
from . import isa as nisa
from . import tracer as _tracer
from .operands import nki_op, shape_arg
from .tensor import NkiTensor

#: The names ``nl`` re-exports (``from .nlmath import *``).
__all__ = [
    "abs", "add", "all", "arctan", "bitwise_and", "bitwise_or", "bitwise_xor", "broadcast_to",
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


def _is_column(t: NkiTensor, other: NkiTensor) -> bool:
    return (t.ndim == other.ndim and t.shape[0] == other.shape[0]
            and builtins.all(n == 1 for n in t.shape[1:])
            and builtins.any(n != 1 for n in other.shape[1:]))


def binary(name: str, x: Any, y: Any, dtype: Any = None, mask: Any = None) -> Any:
    """``x (name) y`` for tiles and scalars, with NKI broadcasting and type promotion."""
    xt, yt = isinstance(x, NkiTensor), isinstance(y, NkiTensor)
    if not xt and not yt:
        raise _tracer.current(f"nl.{name}").fail(
            KernelError, f"nl.{name}: expected at least one tile operand, found "
            f"{type(x).__name__} and {type(y).__name__}")
    for t in (x, y):
        if isinstance(t, NkiTensor):
            _check_on_chip(t, f"nl.{name}")
    if xt and yt:
        out = dtype if dtype is not None else promote(x.dtype, y.dtype)
        if x.space is MemSpace.PSUM and y.space is MemSpace.PSUM:
            # VectorE reads at most one operand from PSUM: the compiler stages one in SBUF.
            y = nisa.tensor_copy(y)
        if x.shape == y.shape:
            return nisa.tensor_tensor(x, y, name, dtype=out, mask=mask)
        if _is_column(y, x):
            return nisa.tensor_scalar(x, name, y, dtype=out, mask=mask)
        if _is_column(x, y):
            return nisa.tensor_scalar(y, name, x, reverse0=name not in _COMMUTATIVE, dtype=out,
                                      mask=mask)
        return nisa.tensor_tensor(*_broadcast(x, y, name), name, dtype=out, mask=mask)
    tile, scalar, reverse = (x, y, False) if xt else (y, x, name not in _COMMUTATIVE)
    out = dtype if dtype is not None else promote_scalar(tile.dtype, scalar)
    return nisa.tensor_scalar(tile, name, scalar, reverse0=reverse, dtype=out, mask=mask)


def _broadcast(x: NkiTensor, y: NkiTensor, name: str) -> tuple[NkiTensor, NkiTensor]:
    if x.ndim != y.ndim:
        raise _tracer.current().fail(ShapeError, f"nl.{name}: operands must have the same number "
                                     f"of dims; found {list(x.shape)} and {list(y.shape)}")
    shape = []
    for a, b in zip(x.shape, y.shape):
        if a != b and 1 not in (a, b):
            raise _tracer.current().fail(ShapeError, f"nl.{name}: shapes {list(x.shape)} and "
                                         f"{list(y.shape)} do not broadcast")
        shape.append(builtins.max(a, b))
    if x.shape[0] != y.shape[0]:
        raise _tracer.current().fail(
            UnsupportedError, f"nl.{name}: broadcasting along the partition dim ({list(x.shape)}"
            f" with {list(y.shape)}) is not supported yet; give both operands "
            f"{shape[0]} partitions")
    return x.with_shape(tuple(shape)), y.with_shape(tuple(shape))


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
                                     f"{type(x).__name__}")
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
    return binary("multiply", x, -1 if not is_float(x.dtype) else -1.0, dtype, mask)


def logical_not(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """``not x`` element-wise (1 where x == 0)."""
    return binary("equal", x, 0, dtype, mask)


def invert(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """Bitwise not of an integer tile."""
    return binary("bitwise_xor", x, -1, dtype, mask)


# --- reductions --------------------------------------------------------------------------------
def _reduce(name: str, x: Any, axis: Any, dtype: Any, keepdims: bool, mask: Any) -> NkiTensor:
    if not isinstance(x, NkiTensor):
        raise _tracer.current().fail(KernelError, f"nl reduction: expected a tile, found "
                                     f"{type(x).__name__}")
    _check_on_chip(x, f"nl reduction ({name})")
    return nisa.tensor_reduce(name, x, axis, dtype=dtype, keepdims=keepdims, mask=mask)


def _axes_size(x: NkiTensor, axis: Any) -> int:
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return math.prod(x.shape[int(a) % x.ndim] for a in axes)


@nki_op("add")
def sum(x: Any, axis: Any, *, dtype: Any = None, keepdims: bool = False, mask: Any = None,
        **_: Any) -> NkiTensor:  # noqa: A001
    """Sum over free axes."""
    return _reduce("add", x, axis, dtype, keepdims, mask)


@nki_op("multiply")
def prod(x: Any, axis: Any, *, dtype: Any = None, keepdims: bool = False, mask: Any = None,
         **_: Any) -> NkiTensor:
    """Product over free axes."""
    return _reduce("multiply", x, axis, dtype, keepdims, mask)


@nki_op("maximum")
def max(x: Any, axis: Any, *, dtype: Any = None, keepdims: bool = False, mask: Any = None,
        **_: Any) -> NkiTensor:  # noqa: A001
    """Maximum over free axes."""
    return _reduce("maximum", x, axis, dtype, keepdims, mask)


@nki_op("minimum")
def min(x: Any, axis: Any, *, dtype: Any = None, keepdims: bool = False, mask: Any = None,
        **_: Any) -> NkiTensor:  # noqa: A001
    """Minimum over free axes."""
    return _reduce("minimum", x, axis, dtype, keepdims, mask)


def all(x: Any, axis: Any, *, dtype: Any = None, keepdims: bool = False, mask: Any = None,
        **_: Any) -> NkiTensor:  # noqa: A001
    """Logical and over free axes."""
    return _reduce("logical_and", x, axis, dtype, keepdims, mask)


def mean(x: Any, axis: Any, *, dtype: Any = None, keepdims: bool = False, mask: Any = None,
         **_: Any) -> NkiTensor:
    """Mean over free axes: a sum (in fp32) then a multiply by 1/n."""
    s = _reduce("add", x, axis, float32, keepdims, mask)
    return nisa.tensor_scalar(s, "multiply", 1.0 / _axes_size(x, axis),
                              dtype=dtype if dtype is not None else x.dtype)


def var(x: Any, axis: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """Population variance over free axes: mean of squared deviations."""
    m = mean(x, axis, dtype=float32, keepdims=True, mask=mask)
    d = nisa.tensor_scalar(x, "subtract", m, dtype=float32)
    sq = nisa.tensor_tensor(d, d, "multiply", dtype=float32)
    return mean(sq, axis, dtype=dtype if dtype is not None else x.dtype, keepdims=True)


# --- composites ----------------------------------------------------------------------------------
def _partition_column(p: int) -> NkiTensor:
    """A fresh [p, 1] float32 SBUF tile (an accumulator-register read target)."""
    from .language import ndarray
    return ndarray((p, 1), float32)


def softmax(x: Any, axis: Any = -1, *, dtype: Any = None, compute_dtype: Any = None,
            mask: Any = None, **_: Any) -> NkiTensor:
    """Softmax over the free axis: max (VectorE), exp with fused sum (ScalarE), scale."""
    tr = _tracer.current("nl.softmax")
    if not isinstance(x, NkiTensor) or x.ndim != 2 or int(axis) % 2 != 1:
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


def static_cast(x: Any, dtype: Any) -> NkiTensor:
    """Convert a tile to ``dtype`` (a VectorE copy with an output cast)."""
    return nisa.tensor_copy(x, dtype=to_dtype(dtype, "static_cast dtype"))



def broadcast_to(src: Any, shape: Any, **_: Any) -> NkiTensor:
    """Broadcast a tile to ``shape``: size-1 free axes by a strided copy (VectorE); a single
    partition to many by a TensorE matmul with a ones stationary, as the architecture guide
    describes (``nc_matmul(ones[1, M], x, is_stationary_onezero=True)``)."""
    tr = _tracer.current("broadcast_to")
    if not isinstance(src, NkiTensor):
        raise tr.fail(KernelError, f"broadcast_to: expected a tile, found {type(src).__name__}")
    shape = shape_arg(shape, "broadcast_to shape")
    if len(shape) != src.ndim:
        raise tr.fail(ShapeError, f"broadcast_to: expected a shape with {src.ndim} dims, found "
                      f"{list(shape)}")
    if builtins.any(n not in (1, m) for n, m in zip(src.shape, shape)):
        raise tr.fail(ShapeError, f"broadcast_to: expected each dim of {list(src.shape)} to be "
                      f"1 or the target's, found target {list(shape)}")
    if src.shape[0] == shape[0]:
        return nisa.tensor_copy(src.with_shape(shape))
    if src.ndim != 2 or src.shape[1] != shape[1]:
        raise tr.fail(ShapeError, f"broadcast_to: the partition dim broadcasts (from 1) only "
                      f"for 2-D tiles with the free size unchanged; found {list(src.shape)} -> "
                      f"{list(shape)}")
    from .language import ndarray
    m, f = shape
    # The ones stationary is a constant: made once per launch instance and dtype, as a compiler
    # keeps constants (a memset per broadcast would sit in VectorE's queue just before the
    # broadcast's consumer and make it wait for the whole TensorE round trip).
    key = ("broadcast_ones", tr.instance, m, src.dtype)
    ones = tr.lang_state.get(key)
    if ones is None:
        loops, tr.loops = tr.loops, ()  # recorded as if hoisted before every loop
        try:
            ones = tr.lang_state[key] = nisa.memset((1, m), 1.0, src.dtype)
        finally:
            tr.loops = loops
    if (src.dtype == float32
            and f * src.dtype.itemsize <= tr.config.psum_bytes_per_partition
            // tr.config.psum_num_banks):
        # The matmul's fp32 result fits one PSUM bank: it is the broadcast tile, read in place
        # by its consumer (VectorE / ScalarE read PSUM; a tensor_tensor with one PSUM operand
        # costs N instead of 2N), with no copy to SBUF (docs/frontend.md, "broadcast_to").
        return nisa.nc_matmul(ones, src, is_stationary_onezero=True)
    out = ndarray((m, f), src.dtype)
    step = tr.config.gemm_moving_fmax
    for lo in range(0, f, step):
        hi = builtins.min(f, lo + step)
        part = nisa.nc_matmul(ones, src[:, lo:hi], is_stationary_onezero=True)
        out[:, lo:hi] = nisa.tensor_copy(part, dtype=src.dtype)
    return out
