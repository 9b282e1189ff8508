"""The meaning of every :class:`~neuroncore_sim.program.ir.Opcode`, as numpy: the living specification.

One function per opcode, all with the same signature ``fn(srcs, attrs, outs, engine)``:

- ``srcs``: role -> the gathered source array (any NKI dtype; views are never written),
- ``attrs``: the instruction's attrs (see ``ir.OPCODE_DOC``),
- ``outs``: role -> :class:`Out` (shape and dtype of each destination),
- ``engine``: the engine that runs the instruction (only a few opcodes care),

returning role -> computed values. Arithmetic follows the engines: Vector, Scalar and GpSimd
cast every input to float32, compute in float32 and leave the output cast to the caller
(``dtypes.cast``); bit-vector operators work on the integer bit patterns of the destination's
width with no float conversion. Copies (tensor_copy on Vector/GpSimd, DMA) are bit-exact when
source and destination dtypes match, and cast through float32 otherwise.

Sources: shared/arch.md sections 1.6-1.8, 2 and 3.4; the ``nki.isa`` docstrings (v2.26.1) and
the ALU / activation tables of ``nki.api.shared``.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, NamedTuple

import numpy as np

from ...dtypes import cast
from ...errors import DTypeError, KernelError, ShapeError, UnsupportedError, expected
from ...program.ir import Engine, Opcode
from ...program.ops import ALIASES, REDUCE_OPS

F32 = np.float32


class Out(NamedTuple):
    """Shape and dtype of one destination operand."""

    shape: tuple[int, ...]
    dtype: np.dtype


Arrays = Mapping[str, np.ndarray]
Outs = Mapping[str, Out]
Semantic = Callable[[Arrays, Mapping[str, object], Outs, Engine], dict[str, np.ndarray]]


def f32(x: object) -> np.ndarray:
    """``x`` (array or Python scalar) as float32, without copying float32 arrays."""
    return x.astype(F32, copy=False) if isinstance(x, np.ndarray) else np.asarray(x, F32)


def canon(op: object) -> str:
    """The canonical operator name of an attrs value ("max" -> "maximum")."""
    name = str(op)
    return ALIASES.get(name, name)


# --- erf: numpy has none and scipy is not a dependency ---------------------------------------

_ERF_TAYLOR_BELOW = 0.5  # below this |x| the series is exact to fp32 within 8 terms
_ERF_TAYLOR_TERMS = 8  # last term < 0.25**8 / 8! ~ 4e-10 of the first
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
#: Chebyshev fit of erfc (Numerical Recipes, 2nd ed., section 6.2, "erfcc"): fractional error
#: below 1.2e-7 for every x >= 0, i.e. about one fp32 ulp.
_ERFC_COEFS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
               -1.13520398, 1.48851587, -0.82215223, 0.17087277)


def erf(x: np.ndarray) -> np.ndarray:
    """Vectorised erf, accurate to about one float32 ulp (computed in float64)."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * ax)
    poly = np.zeros_like(t)
    for c in reversed(_ERFC_COEFS[1:]):
        poly = (poly + c) * t
    big = np.copysign(1.0 - t * np.exp(poly + _ERFC_COEFS[0] - ax * ax), x)
    # Near 0, 1 - erfc(x) loses the relative accuracy the fit has; the Taylor series does not.
    z, term, small = x * x, x.copy(), x.copy()
    for n in range(1, _ERF_TAYLOR_TERMS + 1):
        term *= -z / n
        small += term / (2 * n + 1)
    return np.where(ax < _ERF_TAYLOR_BELOW, small * _TWO_OVER_SQRT_PI, big).astype(F32)


# --- activation functions (ScalarE; float32 in, float32 out) ---------------------------------

_SQRT1_2 = F32(math.sqrt(0.5))
_INV_SQRT_2PI = F32(1.0 / math.sqrt(2.0 * math.pi))
_SQRT_2_OVER_PI = F32(math.sqrt(2.0 / math.pi))
_GELU_TANH_CUBIC = F32(0.044715)  # coefficient of the tanh approximation of gelu
_GELU_SIGMOID_SCALE = F32(1.702)  # x * sigmoid(1.702 x) approximation of gelu


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return F32(1.0) / (F32(1.0) + np.exp(-x))


#: Activation name -> float32 function (names of ``ops.ACTIVATIONS``).
ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "copy": lambda x: x, "identity": lambda x: x, "square": np.square,
    "sigmoid": _sigmoid, "relu": lambda x: np.maximum(x, F32(0.0)),
    "gelu": lambda x: F32(0.5) * x * (F32(1.0) + erf(x * _SQRT1_2)),
    "gelu_dx": lambda x: F32(0.5) * (F32(1.0) + erf(x * _SQRT1_2))
    + x * np.exp(F32(-0.5) * x * x) * _INV_SQRT_2PI,
    "gelu_apprx_tanh": lambda x: F32(0.5) * x * (
        F32(1.0) + np.tanh(_SQRT_2_OVER_PI * (x + _GELU_TANH_CUBIC * x * x * x))),
    "gelu_apprx_sigmoid": lambda x: x * _sigmoid(_GELU_SIGMOID_SCALE * x),
    "silu": lambda x: x * _sigmoid(x),
    "silu_dx": lambda x: _sigmoid(x) * (F32(1.0) + x * (F32(1.0) - _sigmoid(x))),
    "tanh": np.tanh, "softplus": lambda x: np.logaddexp(F32(0.0), x),
    "mish": lambda x: x * np.tanh(np.logaddexp(F32(0.0), x)),
    "erf": erf, "erf_dx": lambda x: F32(_TWO_OVER_SQRT_PI) * np.exp(-x * x),
    "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "arctan": np.arctan, "sqrt": np.sqrt, "rsqrt": lambda x: F32(1.0) / np.sqrt(x),
    "reciprocal": lambda x: F32(1.0) / x, "sign": np.sign, "abs": np.abs,
    "negative": np.negative, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
}


# --- ALU operators (VectorE / GpSimd) ---------------------------------------------------------

def _predicate(fn: np.ufunc, logical: bool) -> Callable:
    """A comparison (or, with ``logical``, a logical op on a != 0) giving 1.0 / 0.0."""
    if logical:
        return lambda a, b: fn(a != 0, b != 0).astype(F32)
    return lambda a, b: fn(a, b).astype(F32)


#: Arithmetic binary operators, float32 in and out; predicates give 1.0 / 0.0.
ARITH: dict[str, Callable] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "mod": np.mod,  # result takes the divisor's sign (numpy / Python remainder)
    "fmod": np.fmod,  # result takes the dividend's sign (C fmod)
    "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
} | {name: _predicate(getattr(np, name), name.startswith("logical_")) for name in (
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
    "logical_or", "logical_xor")}
#: Unary ALU operators: the scalar operand is ignored (NKI requires it to be None or 0).
UNARY_ALU: dict[str, Callable] = {
    "rsqrt": ACTIVATIONS["rsqrt"], "reciprocal": ACTIVATIONS["reciprocal"], "abs": np.abs,
    "logical_not": lambda a: (a == 0).astype(F32),
}


def _shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Logical shift right (zeros shifted in); NKI has no arithmetic shift right."""
    unsigned = np.dtype(f"uint{a.dtype.itemsize * 8}")
    return (a.view(unsigned) >> b.astype(unsigned)).view(a.dtype)


#: Bit-vector operators on integer bit patterns.
BITVEC: dict[str, Callable] = {
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": _shift_right,
}

#: Reduction operators -> the ufunc whose ``reduce`` implements them (same names as numpy).
REDUCE: dict[str, np.ufunc] = {name: getattr(np, name) for name in REDUCE_OPS}


def bits(x: object, dt: np.dtype) -> np.ndarray:
    """Integer bit patterns of ``x`` in dtype ``dt`` (wrapping, no float conversion)."""
    if dt.kind not in "iu":
        raise DTypeError(expected("bit-vector operator output", "an integer dtype", dt))
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "iub":
            raise DTypeError(expected("bit-vector operator input", "an integer dtype", x.dtype))
        return x.astype(dt, copy=False)
    return np.asarray(int(x)).astype(dt)  # type: ignore[call-overload]


def alu(op: object, reverse: bool = False, out: np.dtype | None = None) -> Callable:
    """The function ``(tensor, operand) -> result`` of ALU operator ``op``.

    ``reverse`` swaps the operands (``operand op tensor``). Bit-vector operators compute in the
    integer dtype ``out``; unary operators apply to ``tensor`` and ignore ``operand``.

    Raises:
        KernelError: unknown operator name.
    """
    name = canon(op)
    if name in ARITH:
        fn = ARITH[name]
        return (lambda x, y: fn(f32(y), f32(x))) if reverse else (lambda x, y: fn(f32(x), f32(y)))
    if name in UNARY_ALU:
        ufn = UNARY_ALU[name]
        return lambda x, y: ufn(f32(x))
    dt = np.dtype(out if out is not None else np.int32)
    if name == "invert":  # the one unary bit-vector operator
        return lambda x, y: np.invert(bits(x, dt))
    if name in BITVEC:
        bfn = BITVEC[name]
        if reverse:
            return lambda x, y: bfn(bits(y, dt), bits(x, dt))
        return lambda x, y: bfn(bits(x, dt), bits(y, dt))
    known = sorted(ARITH) + sorted(UNARY_ALU) + sorted(BITVEC) + ["invert"]
    raise KernelError(expected("ALU operator", f"one of {known}", repr(op)))


def reduce_last(op: object, x: np.ndarray, out: np.dtype) -> np.ndarray:
    """Reduce the last axis of ``x`` with reduction operator ``op``."""
    name = canon(op)
    if name not in REDUCE:
        raise KernelError(expected("reduction operator", f"one of {sorted(REDUCE)}", repr(op)))
    if name.startswith("bitwise_"):
        return REDUCE[name].reduce(bits(x, out), axis=-1)
    if name.startswith("logical_"):
        return REDUCE[name].reduce(f32(x) != 0, axis=-1).astype(F32)
    return REDUCE[name].reduce(f32(x), axis=-1)


def accumulate(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``old + new`` of a read-modify-write destination (PSUM, DMA add): float32, exact ints."""
    if old.dtype.kind in "iub" and new.dtype.kind in "iub":
        return old.astype(np.int64) + new.astype(np.int64)
    return f32(old) + f32(new)


def _rows(x: np.ndarray) -> np.ndarray:
    """``x`` as [partitions, elements per partition] (free axes flattened)."""
    return x.reshape(x.shape[0] if x.ndim else 1, -1)


def _col(x: np.ndarray, ndim: int) -> np.ndarray:
    """A [P, 1] per-partition operand shaped to broadcast over a ``ndim``-d tile."""
    return x.reshape((x.shape[0],) + (1,) * (ndim - 1))


def _same_or_f32(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``x`` untouched when already of dtype ``dt`` (bit-exact copy), else as float32."""
    return x if x.dtype == dt else f32(x)


# --- one function per opcode -----------------------------------------------------------------

def matmul(stationary: np.ndarray, moving: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``stationary[K, M...].T @ moving[K, N...]`` in float32 (into ``out`` when given)."""
    if stationary.shape[0] != moving.shape[0]:
        raise ShapeError(expected("nc_matmul contraction (partition) sizes", "equal",
                                  f"{stationary.shape[0]} and {moving.shape[0]}"))
    return np.matmul(_rows(f32(stationary)).T, _rows(f32(moving)), out=out)


def nc_matmul(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[M, N] = stationary[K, M].T @ moving[K, N], float32 inputs and accumulation."""
    return {"out": matmul(srcs["stationary"], srcs["moving"])}


def nc_transpose(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[F, P] = data[P, F] (free axes flattened)."""
    t = _rows(srcs["data"]).T
    if engine is not Engine.TENSOR:
        return {"out": _same_or_f32(t, outs["out"].dtype)}
    # TensorE transposes by a matmul with the identity, so on NC-v2 a NaN/Inf in data[p, f]
    # (times 0) poisons every other element of output row f (assumption, docs/model.md).
    t = f32(t)
    bad = ~np.isfinite(t)
    if bad.any():
        t = np.where(bad.sum(axis=1, keepdims=True) - bad > 0, F32(np.nan), t)
    return {"out": t}


def activation_input(srcs: Arrays, attrs: Mapping) -> np.ndarray:
    """The activation function's argument, ``data * scale + bias`` in float32."""
    x = f32(srcs["data"])
    scale = srcs.get("scale")
    scale = attrs.get("scale") if scale is None else _col(scale, x.ndim)
    if scale is not None and not (np.ndim(scale) == 0 and scale == 1.0):  # 1.0: skip a pass
        x = x * f32(scale)
    bias = srcs.get("bias")
    bias = attrs.get("bias") if bias is None else _col(bias, x.ndim)  # NC-v3: scalars too
    if bias is not None:
        x = x + f32(bias)
    return x


def activation(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = op(data * scale + bias); reduce_res = row sums of out (before any register logic)."""
    x = activation_input(srcs, attrs)
    name = canon(attrs["op"])
    fn = ACTIVATIONS.get(name)
    if fn is None:
        raise KernelError(expected("activation function", f"one of {sorted(ACTIVATIONS)}",
                                   repr(attrs["op"])))
    y = f32(fn(x))
    result = {"out": y}
    reduce_op = attrs.get("reduce_op")
    if reduce_op is not None and canon(reduce_op) != "add":
        raise UnsupportedError(expected("activation reduce_op on NeuronCore-v2", "'add'",
                                        repr(reduce_op)))
    if "reduce_res" in outs or reduce_op is not None or attrs.get("reduce_cmd") not in (
            None, "idle"):
        result["reduce_res"] = np.add.reduce(_rows(y), axis=1, keepdims=True)
    return result


def tensor_tensor(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = data1 op data2 (float32; exact integer math for int tiles on GpSimd)."""
    a, b, op = srcs["data1"], srcs["data2"], canon(attrs["op"])
    dt = outs["out"].dtype
    if a.ndim != b.ndim:  # NKI aligns shapes at the partition dim: append free axes, not prepend
        n = max(a.ndim, b.ndim)
        a, b = (x.reshape(x.shape + (1,) * (n - x.ndim)) for x in (a, b))
    if (engine is Engine.GPSIMD and op in ("add", "subtract", "multiply", "maximum", "minimum")
            and a.dtype.kind in "iu" and b.dtype.kind in "iu" and dt.kind in "iu"):
        return {"out": ARITH[op](a.astype(np.int64), b.astype(np.int64))}
    return {"out": alu(op, False, dt)(a, b)}


def _stage(srcs: Arrays, attrs: Mapping, n: int, x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``x opN operandN`` (operands swapped by reverseN), the stages of the tensor_scalar family."""
    operand = srcs.get(f"operand{n}")
    operand = attrs.get(f"operand{n}") if operand is None else (
        operand if operand.shape == x.shape else _col(operand, x.ndim))
    return alu(attrs[f"op{n}"], bool(attrs.get(f"reverse{n}")), dt)(x, operand)


def tensor_scalar(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = (data op0 operand0) op1 operand1, with reverse0/1 swapping operands."""
    dt = outs["out"].dtype
    res = _stage(srcs, attrs, 0, srcs["data"], dt)
    return {"out": res if attrs.get("op1") is None else _stage(srcs, attrs, 1, res, dt)}


def scalar_tensor_tensor(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = (data op0 operand0) op1 operand1, operand1 a full tile."""
    dt = outs["out"].dtype
    return {"out": _stage(srcs, attrs, 1, _stage(srcs, attrs, 0, srcs["data"], dt), dt)}


def tensor_scalar_reduce(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = data op0 operand0; reduce_res = reduce_op over the free axes of out."""
    res = _stage(srcs, attrs, 0, srcs["data"], outs["out"].dtype)
    red = reduce_last(attrs["reduce_op"], _rows(res), outs["reduce_res"].dtype)
    return {"out": res, "reduce_res": red[:, None]}


def tensor_reduce(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """Reduce data over ``axes`` (free axes), optionally negated, optionally keeping dims."""
    data = srcs["data"]
    raw = attrs.get("axes", tuple(range(1, data.ndim)))
    axes = tuple(a % data.ndim for a in ((raw,) if isinstance(raw, int) else raw))  # type: ignore
    if 0 in axes or len(set(axes)) != len(axes):
        raise ShapeError(expected("tensor_reduce axes", "distinct free axes (>= 1)", raw))
    kept = [d for d in range(data.ndim) if d not in axes]
    moved = np.transpose(data, kept + list(axes))
    red = reduce_last(attrs["op"], moved.reshape(moved.shape[:len(kept)] + (-1,)),
                      outs["out"].dtype)
    if attrs.get("negate"):
        red = -f32(red)
    if attrs.get("keepdims"):
        red = red.reshape(tuple(1 if d in axes else n for d, n in enumerate(data.shape)))
    return {"out": red}


def tensor_partition_reduce(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[1, F] = reduction of data[P, F] across partitions."""
    data = srcs["data"]
    return {"out": reduce_last(attrs["op"], np.moveaxis(data, 0, -1), outs["out"].dtype)[None]}


def tensor_tensor_scan(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[:, i] = (data0[:, i] op0 out[:, i-1]) op1 data1[:, i], out[:, -1] = initial."""
    d0, d1 = _rows(f32(srcs["data0"])), _rows(f32(srcs["data1"]))
    if d0.shape != d1.shape:
        raise ShapeError(expected("tensor_tensor_scan data1 shape", d0.shape, d1.shape))
    init = srcs["initial"] if "initial" in srcs else attrs.get("initial")
    if init is None:
        raise KernelError(expected("tensor_tensor_scan initial", "a float or a [P, 1] tile", None))
    prev = np.broadcast_to(f32(init).reshape(-1), d0.shape[:1])
    # reverse0: data0 becomes the rhs of op0; reverse1: data1 becomes the lhs of op1.
    op0 = alu(attrs["op0"], bool(attrs.get("reverse0")))
    op1 = alu(attrs["op1"], bool(attrs.get("reverse1")))
    out = np.empty(d0.shape, dtype=F32)
    for i in range(d0.shape[1]):  # a true recurrence: one vector step per column
        prev = op1(op0(d0[:, i], prev), d1[:, i])
        out[:, i] = prev
    return {"out": out}


def tensor_copy(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = src: bit-exact on Vector/GpSimd for equal dtypes; ScalarE casts through fp32."""
    src = srcs["src"]
    return {"out": f32(src) if engine is Engine.SCALAR else _same_or_f32(src, outs["out"].dtype)}


def memset(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = value (broadcast); integer values reach integer tiles exactly."""
    value, dt = attrs["value"], outs["out"].dtype
    exact_int = isinstance(value, (int, np.integer)) and dt.kind in "iub"
    return {"out": np.asarray(value, dtype=np.int64) if exact_int else f32(value)}


def iota(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[i] = expr(i), computed in (wrapping) int32 arithmetic."""
    return {"out": attrs["expr"].evaluate(outs["out"].shape).astype(np.int32)}  # type: ignore


def affine_select(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = pred ? on_true : on_false_value (on_true exact when its dtype is out's)."""
    on_true, dt = srcs["on_true"], outs["out"].dtype
    keep = attrs["pred"].evaluate(on_true.shape)  # type: ignore[attr-defined]
    false = f32(attrs["on_false_value"])
    if on_true.dtype == dt:
        return {"out": np.where(keep, on_true, cast(false, dt))}
    return {"out": np.where(keep, f32(on_true), false)}


def reciprocal(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = 1 / data."""
    return {"out": F32(1.0) / f32(srcs["data"])}


def bn_stats(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[P, 6] = (count, mean, variance*count) of the even, then of the odd elements."""
    x = _rows(f32(srcs["data"]))
    cols = []
    for half in (x[:, 0::2], x[:, 1::2]):  # an empty odd half (N = 1) gives (0, 0, 0)
        n = np.full(x.shape[0], half.shape[1], F32)
        mean = half.sum(axis=1, dtype=F32) / np.maximum(n, F32(1.0))
        cols += [n, mean, np.square(half - mean[:, None]).sum(axis=1, dtype=F32)]
    return {"out": np.stack(cols, axis=1)}


def bn_aggr(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out[P, 2] = (mean, variance) merged from (count, mean, variance*count) triples."""
    x = _rows(f32(srcs["data"]))
    if x.shape[1] % 3:
        raise ShapeError(expected("bn_aggr elements per partition", "a multiple of 3", x.shape[1]))
    g = x.reshape(x.shape[0], -1, 3)
    n, mean, m2 = g[..., 0], g[..., 1], g[..., 2]
    total = n.sum(axis=1)
    safe = np.where(total > 0, total, F32(1.0))  # empty statistics give mean 0, variance 0
    mu = (n * mean).sum(axis=1) / safe
    # Chan et al.'s parallel merge: M2 = sum M2_i + sum n_i (mean_i - mean)^2.
    var = (m2.sum(axis=1) + (n * np.square(mean - mu[:, None])).sum(axis=1)) / safe
    return {"out": np.stack([mu, var], axis=1)}


def dma_copy(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = src: exact for equal dtypes, through float32 otherwise (dst_rmw_op: executor)."""
    return {"out": _same_or_f32(srcs["src"], outs["out"].dtype)}


#: Axis permutation of dma_transpose by source rank (nki.isa.dma_transpose).
DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(srcs: Arrays, attrs: Mapping, outs: Outs, engine: Engine) -> dict:
    """out = src permuted ([A, B] -> [B, A]; 3-d and 4-d per ``DMA_TRANSPOSE_AXES``)."""
    src = srcs["src"]
    axes = attrs.get("axes") or DMA_TRANSPOSE_AXES.get(src.ndim)
    if axes is None:
        raise ShapeError(expected("dma_transpose source rank", "2, 3 or 4", src.ndim))
    return {"out": _same_or_f32(np.transpose(src, axes), outs["out"].dtype)}  # type: ignore


#: Opcode -> its meaning. ACTIVATION_REDUCE shares activation (the executor resets registers).
#: Opcode -> meaning, for the opcodes defined here (the package merges every part).
CORE_SEMANTICS: dict[Opcode, Semantic] = {
    Opcode.NC_MATMUL: nc_matmul, Opcode.NC_TRANSPOSE: nc_transpose,
    Opcode.ACTIVATION: activation, Opcode.ACTIVATION_REDUCE: activation,
    Opcode.TENSOR_TENSOR: tensor_tensor, Opcode.TENSOR_SCALAR: tensor_scalar,
    Opcode.SCALAR_TENSOR_TENSOR: scalar_tensor_tensor,
    Opcode.TENSOR_SCALAR_REDUCE: tensor_scalar_reduce, Opcode.TENSOR_REDUCE: tensor_reduce,
    Opcode.TENSOR_PARTITION_REDUCE: tensor_partition_reduce,
    Opcode.TENSOR_TENSOR_SCAN: tensor_tensor_scan, Opcode.TENSOR_COPY: tensor_copy,
    Opcode.MEMSET: memset, Opcode.IOTA: iota, Opcode.AFFINE_SELECT: affine_select,
    Opcode.RECIPROCAL: reciprocal, Opcode.BN_STATS: bn_stats, Opcode.BN_AGGR: bn_aggr,
    Opcode.DMA_COPY: dma_copy, Opcode.DMA_TRANSPOSE: dma_transpose,
}
