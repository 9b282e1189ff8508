"""``nl``'s dtypes and their limits (``nl.finfo``, ``nl.fp32``), and the ``nl`` calls that are
one or a few instructions on whole tiles: ``copy``, ``transpose``, ``matmul``, ``device_print``.
"""

from __future__ import annotations

from typing import Any

from ... import dtypes as _dt
from ...errors import KernelError, ShapeError
from ...program.ir import MemSpace
from .. import tracer as _tracer
from ..isa import compute as nisa  # (the instructions themselves, not the nisa facade)
from ..operands import operand, require_matmul_dtype
from ..tensors.tensor import NkiTensor


# --- dtypes -------------------------------------------------------------------------------------
float32, float16, bfloat16, tfloat32 = _dt.float32, _dt.float16, _dt.bfloat16, _dt.tfloat32
float8_e4m3, float8_e5m2 = _dt.float8_e4m3, _dt.float8_e5m2
int8, int16, int32, uint8, uint16, uint32, bool_ = (_dt.int8, _dt.int16, _dt.int32, _dt.uint8,
                                                    _dt.uint16, _dt.uint32, _dt.bool_)



class finfo:  # noqa: N801
    """Machine limits of a float dtype (``nl.finfo(nl.bfloat16).max``), like ``numpy.finfo``."""

    def __init__(self, dtype: Any) -> None:
        import ml_dtypes
        self.dtype = _dt.to_dtype(dtype, "nl.finfo dtype")
        if not _dt.is_float(self.dtype):
            raise KernelError(f"nl.finfo: expected a float dtype, found {_dt.dtype_name(self.dtype)}")
        info = ml_dtypes.finfo(self.dtype)
        self.min, self.max, self.eps, self.tiny = (float(info.min), float(info.max),
                                                   float(info.eps), float(info.tiny))
        self.bits = int(info.bits)

    def __repr__(self) -> str:
        return f"nl.finfo({_dt.dtype_name(self.dtype)}: min={self.min}, max={self.max})"


fp32 = finfo(float32)  # nl.fp32.min is float32's lowest value (0xff7fffff)
bfp16 = finfo(bfloat16)
bfp16.min = float("-inf")  # documented as the bit pattern 0xff80, which is bfloat16 -inf (arch.md 3.5)
fp16 = finfo(float16)


# --- data movement and layout ------------------------------------------------------------------
def copy(src: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """Copy a tile (VectorE); use it to move a PSUM result into SBUF."""
    return nisa.tensor_copy(src, dtype=dtype, mask=mask)


def transpose(x: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """2-D partition/free transpose on TensorE (result in PSUM)."""
    return nisa.nc_transpose(x, dtype=dtype, mask=mask, engine=nisa.engine.tensor)


def matmul(x: Any, y: Any, *, transpose_x: bool = False, mask: Any = None,
           **_: Any) -> NkiTensor:
    """``x @ y`` on TensorE. Without ``transpose_x`` the compiler first transposes ``x`` on
    TensorE and copies it back to SBUF, as the NKI docs describe. An operand in PSUM (the
    result of ``nl.transpose`` or of another ``nl.matmul``) is first copied to SBUF on VectorE,
    as the compiler does for ``nl`` calls (TensorE reads only SBUF; docs/frontend.md)."""
    for t, name in ((x, "x"), (y, "y")):  # before the lowering, in the user's terms
        operand(t, f"nl.matmul {name}", (MemSpace.SBUF, MemSpace.PSUM))
        require_matmul_dtype(t, f"nl.matmul {name}")
    x = nisa.tensor_copy(x) if x.space is MemSpace.PSUM else x
    y = nisa.tensor_copy(y) if y.space is MemSpace.PSUM else y
    k = x.shape[0] if transpose_x else x.shape[-1]
    if x.ndim != 2 or y.ndim != 2 or y.shape[0] != k:
        form = "x.T @ y (transpose_x=True)" if transpose_x else "x @ y"
        raise _tracer.current().fail(
            ShapeError, f"nl.matmul: {form} with x {list(x.shape)}: expected y of shape [{k}, N], "
            f"found {list(y.shape)}")
    if not transpose_x:
        xt = nisa.nc_transpose(x, engine=nisa.engine.tensor)
        x = nisa.tensor_copy(xt, dtype=x.dtype)
    return nisa.nc_matmul(x, y, mask=mask)


def device_print(prefix: str, x: Any, *, mask: Any = None, **_: Any) -> None:
    """Print a tile's values (simulation only, as on AWS's simulator)."""
    tr = _tracer.current("nl.device_print")
    if isinstance(x, NkiTensor):
        values = tr.read(x.access())
        print(prefix, values if values is not None else f"<{list(x.shape)}: timing-only run>")
    else:
        print(prefix, x)
