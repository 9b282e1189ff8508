"""NKI data types as numpy dtypes, with the hardware's promotion and rounding rules.

Every NKI dtype is a numpy dtype; bfloat16 and float8 come from ``ml_dtypes``. ``tfloat32`` is
stored as float32 but is a distinct dtype object (numpy dtype metadata ``{"nki": "tfloat32"}``):
it compares equal to float32, so use :func:`dtype_name` to tell them apart. Values written to a
tfloat32 tile are rounded to 10 mantissa bits (round to nearest even).

Source of the rules: shared/arch.md section 3.5 ([SHARED] NKI data types and type promotion).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .errors import DTypeError

float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
tfloat32 = np.dtype(np.float32, metadata={"nki": "tfloat32"})
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)

#: name -> dtype for every dtype a tile may have.
BY_NAME: dict[str, np.dtype] = {
    "float32": float32,
    "float16": float16,
    "bfloat16": bfloat16,
    "tfloat32": tfloat32,
    "float8_e4m3": float8_e4m3,
    "float8_e5m2": float8_e5m2,
    "int8": int8,
    "int16": int16,
    "int32": int32,
    "uint8": uint8,
    "uint16": uint16,
    "uint32": uint32,
    "bool": bool_,
}
_ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "bool_": "bool"}

FLOAT_NAMES = frozenset({"float32", "float16", "bfloat16", "tfloat32", "float8_e4m3", "float8_e5m2"})
_FLOAT_RANK = {"float8_e4m3": 0, "float8_e5m2": 0, "bfloat16": 1, "float16": 1, "tfloat32": 2,
               "float32": 3}


def dtype_name(dt: np.dtype) -> str:
    """NKI name of a dtype ("bfloat16", "tfloat32", ...)."""
    known = _KNOWN.get(id(dt))  # by identity: tfloat32 == float32, and this runs per operand
    if known is not None and known[0] is dt:
        return known[1]
    return _dtype_name(dt)


def _dtype_name(dt: np.dtype) -> str:
    if dt.metadata and dt.metadata.get("nki") == "tfloat32":
        return "tfloat32"
    if dt == bool_:
        return "bool"
    return dt.name


#: id -> (dtype, name) of the NKI dtype objects (the usual argument of dtype_name).
_KNOWN = {id(dt): (dt, _dtype_name(dt)) for dt in BY_NAME.values()}


def dtype_str(dt: np.dtype) -> str:
    """``str(dt)``, remembered per dtype object: numpy builds the string anew at every call
    (the compile passes key thousands of operands by it), and a kernel has a few dtype
    objects."""
    known = _STRS.get(id(dt))
    if known is None or known[0] is not dt:
        if len(_STRS) >= 256:  # (dtype objects made on the fly: keep the table small)
            _STRS.clear()
        known = _STRS[id(dt)] = (dt, str(dt))
    return known[1]


#: id -> (dtype, str) for dtype_str (by identity, as _KNOWN).
_STRS: dict[int, tuple[np.dtype, str]] = {}


def to_dtype(value: object, what: str = "dtype") -> np.dtype:
    """Normalise anything a user may pass as a dtype into one of the NKI numpy dtypes.

    Raises:
        DTypeError: the dtype is not an NKI dtype (float64 and int64 are not: the hardware has
            no 64-bit types).
    """
    if isinstance(value, np.dtype) and value.metadata:
        if dtype_name(value) == "tfloat32":
            return tfloat32
        value = np.dtype(value.type)  # other metadata carries no meaning here: drop it
    if value is None:  # np.dtype(None) would be float64
        raise DTypeError(f"{what}: expected an NKI dtype ({', '.join(BY_NAME)}), found None")
    if isinstance(value, str):
        name = _ALIASES.get(value, value)
        if name in BY_NAME:
            return BY_NAME[name]
        raise DTypeError(f"{what}: expected an NKI dtype ({', '.join(BY_NAME)}), found {value!r}")
    try:
        dt = np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        raise DTypeError(
            f"{what}: expected an NKI dtype ({', '.join(BY_NAME)}), found {value!r}"
        ) from None
    name = dtype_name(dt)
    if name not in BY_NAME:
        hint = (" (NeuronCore-v2 has no 64-bit types; cast inputs to 32 bits or less)"
                if dt.kind in "fiu" and dt.itemsize == 8 else "")
        raise DTypeError(f"{what}: expected an NKI dtype ({', '.join(BY_NAME)}), found {name}"
                         + hint)
    return BY_NAME[name]


def is_float(dt: np.dtype) -> bool:
    """True for the floating-point NKI dtypes (tfloat32 and the float8 types included)."""
    return dtype_name(dt) in FLOAT_NAMES


def is_int(dt: np.dtype) -> bool:
    """True for the integer and bool dtypes."""
    return not is_float(dt)


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """Result dtype of a binary operation on two tiles, by NKI's rules.

    (float, int) -> the float; two floats -> the wider, with fp16 + bf16 -> fp32 and
    fp8_e4m3 + fp8_e5m2 -> bf16; two ints -> the wider, mixed signedness widens, and
    int32 + uint32 -> float32 (there is no int64).
    """
    na, nb = dtype_name(a), dtype_name(b)
    if na == nb:
        return a
    fa, fb = na in FLOAT_NAMES, nb in FLOAT_NAMES
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        ra, rb = _FLOAT_RANK[na], _FLOAT_RANK[nb]
        if ra != rb:
            return a if ra > rb else b
        return bfloat16 if ra == 0 else float32  # fp8 pair -> bf16; fp16+bf16 -> fp32
    if na == "bool":
        return b
    if nb == "bool":
        return a
    sa, sb = a.kind == "i", b.kind == "i"
    if sa == sb:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if sa else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    if unsigned.itemsize >= 4:
        return float32
    return np.dtype(f"int{unsigned.itemsize * 16}")


def promote_scalar(tile: np.dtype, scalar: object) -> np.dtype:
    """Result dtype of a tile combined with a Python scalar (a weakly typed value).

    A float scalar with an integer tile gives float32; otherwise the tile's dtype is kept.
    """
    if isinstance(scalar, (bool, np.bool_)):
        return tile
    if isinstance(scalar, (float, np.floating)) and not is_float(tile):
        return float32
    return tile


def round_tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 values to tfloat32 precision (10 mantissa bits, nearest even)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    lsb = (bits >> np.uint32(13)) & np.uint32(1)
    finite = (bits & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
    rounded = np.where(finite, (bits + np.uint32(0x0FFF) + lsb) & np.uint32(0xFFFFE000), bits)
    return rounded.astype(np.uint32).view(np.float32)


def cast(values: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Convert computed values (usually float32) to a tile dtype as the engines' output cast does.

    Floats round to nearest even (ml_dtypes). Floats to integers round to nearest even and
    saturate at the integer range; NaN becomes 0 (an assumption, docs/model.md).
    """
    name = dtype_name(dt)
    if name == "tfloat32":
        return round_tf32(values)
    if is_float(dt) or values.dtype == dt:
        with np.errstate(over="ignore"):  # too large for dt: inf, a value, not a warning
            return values.astype(dt, copy=False)
    if name == "bool":
        return values != 0
    if values.dtype.kind in "iub":
        info = np.iinfo(dt)
        return np.clip(values, info.min, info.max).astype(dt)
    info = np.iinfo(dt)
    v = np.rint(np.nan_to_num(values.astype(np.float64), nan=0.0))
    return np.clip(v, info.min, info.max).astype(dt)
