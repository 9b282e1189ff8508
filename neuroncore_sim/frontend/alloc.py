"""Buffers and allocation: ``nl.sbuf`` / ``nl.psum`` / ``nl.*hbm``, ``nl.par_dim``,
``nl.tile_size``, ``nl.ndarray`` and the creation functions (``full``, ``zeros``, ``ones``,
``*_like``, ``shared_constant``, ``shared_identity_matrix``), with the tile-shape checks.

Allocation records no instruction; ``full`` / ``zeros`` / ``ones`` on chip add one memset per
logical tile (:func:`fill`, the scalar case of a tile assignment). Everything that needs a new
tile (``nl`` math, DMAs, indirect DMAs, ``ncc``'s direct-allocation buffers) imports this module,
which imports no ``nl`` or ``nisa`` facade: only the ``memset`` instruction and the DMA move.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import (CapacityError, KernelError, ShapeError, UnsupportedAttributeError,
                      caller_loc)
from ..program.ir import Engine, MemSpace, Opcode
from . import tracer as _tracer
# the buffers live in buffers.py (tensor views name them too); re-exported for nl
from .tensors.buffers import Buffer, hbm, private_hbm, psum, sbuf, shared_hbm  # noqa: F401
from .isa.compute import memset
from .operands import issue_into, scalar_value, shape_arg, start_partition_error
from .tensors.tensor import NkiTensor
from .transfer import dma_move


class par_dim(int):  # noqa: N801
    """Marks the partition dim in a shape: ``nl.ndarray((4, nl.par_dim(128), 512), ...)``."""

    def __new__(cls, size: Any) -> "par_dim":
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            message = (f"nl.par_dim: expected an integer partition size, found "
                       f"{type(size).__name__} {size!r}")
            tr = _tracer.active_or_none()
            raise (tr.fail(ShapeError, message) if tr is not None
                   else ShapeError(message, caller_loc()))
        return super().__new__(cls, size)


class _TileSize:
    """``nl.tile_size``: hardware tile limits, read from the active configuration."""

    def _cfg(self) -> Any:
        tr = _tracer.active_or_none()
        if tr is not None:
            return tr.config
        from ..config import TRN1
        return TRN1

    pmax = property(lambda self: self._cfg().num_partitions)
    psum_fmax = property(lambda self: self._cfg().psum_fmax)
    gemm_stationary_fmax = property(lambda self: self._cfg().gemm_stationary_fmax)
    gemm_moving_fmax = property(lambda self: self._cfg().gemm_moving_fmax)
    bn_stats_fmax = property(lambda self: self._cfg().bn_stats_fmax)
    psum_num_banks = property(lambda self: self._cfg().psum_num_banks)
    psum_bank_fmax = property(lambda self: self._cfg().psum_bank_bytes // 4)
    total_available_sbuf_size = property(lambda self: self._cfg().sbuf_usable_bytes_per_partition)

    def __getattr__(self, name: str) -> Any:
        # A limit NKI does not define: an UnsupportedError that is also an AttributeError, so
        # hasattr(nl.tile_size, name) still answers False.
        if name.startswith("__"):
            raise AttributeError(name)
        known = [n for n, v in vars(_TileSize).items() if isinstance(v, property)]
        message = f"nl.tile_size.{name}: expected one of {', '.join(known)}, found {name!r}"
        tr = _tracer.active_or_none()
        raise (tr.fail(UnsupportedAttributeError, message) if tr is not None
               else UnsupportedAttributeError(message, caller_loc()))


tile_size = _TileSize()


# --- creation -------------------------------------------------------------------------------------
def _buffer(buffer: Any) -> Buffer:
    if buffer is None:
        return sbuf
    if isinstance(buffer, Buffer):
        return buffer
    raise _tracer.current().fail(KernelError, f"buffer: expected nl.sbuf, nl.psum, nl.hbm, "
                                 f"nl.private_hbm or nl.shared_hbm, found {buffer!r}")


def ndarray(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "",
            **_: Any) -> NkiTensor:
    """Allocate a tensor (no instruction; its contents are undefined until written)."""
    return _allocate(shape, dtype, buffer, name, None)


def _allocate(shape: Any, dtype: Any, buffer: Any, name: str, fill_value: Any) -> NkiTensor:
    """:func:`ndarray`; an on-chip tensor holds ``fill_value`` everywhere (no instruction)
    unless it is None."""
    tr = _tracer.current("nl.ndarray")
    buf = _buffer(buffer)
    shape = shape_arg(shape, "nl.ndarray shape")
    pa = builtins.next((i for i, s in enumerate(shape) if isinstance(s, par_dim)), 0)
    dims = tuple(int(s) for s in shape)
    dt = _dt.to_dtype(dtype, "nl.ndarray dtype")
    if buf.space is not MemSpace.HBM:
        _check_tile_shape(tr, dims, pa, dt, buf)
    placed = None
    if type(buf) is not Buffer:  # ncc.sbuf.alloc / mod_alloc, ncc.psum.alloc / mod_alloc
        # NKI traces an nl.affine_range / nl.sequential_range body once; here it runs per
        # iteration, so Python state the body changes (an address counter, as AWS's allocated
        # attention kernels keep) would drift. A direct allocation at one line of such a loop
        # keeps its first iteration's place.
        loops, later = tr.traced_iteration()
        key = (tr.user_loc(), loops)
        first = tr.lang_state.setdefault("loop_placements", {})
        if later and key in first:
            placed = first[key]  # type: ignore[index]
        else:
            placed = buf.place(tr, dims, pa, dt.itemsize)
            if loops:
                first[key] = placed  # type: ignore[index]
    values = (None if fill_value is None or tr.backend is None
              else np.asarray(fill_value).astype(dt))
    decl = tr.new_tensor(buf.space, dims, dt, partition_axis=pa if buf.space is not MemSpace.HBM
                         else 0, kind=buf.kind, name=name or None, values=values,
                         placement=placed)
    return NkiTensor.whole(decl)


def _check_tile_shape(tr: _tracer.Tracer, dims: tuple[int, ...], pa: int, dt: np.dtype,
                      buf: Buffer) -> None:
    cfg = tr.config
    if not dims or dims[pa] > cfg.num_partitions or dims[pa] < 1:
        raise tr.fail(ShapeError, f"nl.ndarray: partition dim (dim {pa}) must be 1.."
                      f"{cfg.num_partitions}; found shape {list(dims)}")
    free_bytes = math.prod(dims[pa + 1:]) * dt.itemsize
    if buf.space is MemSpace.PSUM and free_bytes > cfg.psum_bank_bytes:
        raise tr.fail(CapacityError, f"nl.ndarray: a PSUM tile must fit one bank; expected at "
                      f"most {cfg.psum_bank_bytes} bytes per partition, found {free_bytes}")


def full(shape: Any, fill_value: Any, dtype: Any, *, buffer: Any = None, name: str = "",
         lazy_initialization: bool = False, **_: Any) -> NkiTensor:
    """A tensor filled with ``fill_value`` (a memset on chip; initial values in HBM). With
    ``lazy_initialization=True`` (the compiler's own kernels pass it) an on-chip tensor is
    declared holding the value, with no memset: its tiles take memory from their first use
    (docs/frontend.md)."""
    buf = _buffer(buffer)
    if buf.space is MemSpace.HBM:
        tr = _tracer.current("nl.full")
        dims = tuple(int(s) for s in shape_arg(shape, "nl.full shape"))
        dt = _dt.to_dtype(dtype, "nl.full dtype")
        values = np.full(dims, fill_value).astype(dt) if tr.backend is not None else None
        decl = tr.new_tensor(MemSpace.HBM, dims, dt, kind=buf.kind, name=name or None,
                             values=values)
        return NkiTensor.whole(decl)
    if isinstance(fill_value, NkiTensor):
        raise _tracer.current("nl.full").fail(
            KernelError, "nl.full fill_value: expected a scalar, found a tile (copy a tile "
            "with nl.copy or an assignment t[...] = x)")
    if lazy_initialization:
        return _allocate(shape, dtype, buf, name, scalar_value(fill_value, "nl.full fill_value"))
    t = ndarray(shape, dtype, buffer=buf, name=name)
    pa = t.decl.partition_axis
    if pa == 0 or math.prod(t.shape[:pa]) == 1:
        fill(t, fill_value)
        return t
    # Block dims are logical tiles (the compiler allocates each on its own, docs/model.md):
    # one memset per tile, as an ISA instruction addresses one (partition, free) tile.
    for idx in np.ndindex(*t.shape[:pa]):
        fill(t[tuple(int(i) for i in idx)], fill_value)
    return t


def zeros(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "",
          lazy_initialization: bool = False, **_: Any) -> NkiTensor:
    """A tensor of zeros."""
    return full(shape, 0, dtype, buffer=buffer, name=name,
                lazy_initialization=lazy_initialization)


def ones(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "",
         lazy_initialization: bool = False, **_: Any) -> NkiTensor:
    """A tensor of ones."""
    return full(shape, 1, dtype, buffer=buffer, name=name,
                lazy_initialization=lazy_initialization)


def _like(a: Any, what: str) -> None:
    """A KernelError unless ``a`` is a tensor or tile (the model of a ``*_like`` call)."""
    if not isinstance(a, NkiTensor):
        raise _tracer.current(what).fail(
            KernelError, f"{what}: expected a tensor or tile to copy the shape of, found "
            f"{type(a).__name__}")


def zeros_like(a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "",
               **_: Any) -> NkiTensor:
    """Zeros with ``a``'s shape (and dtype unless given)."""
    _like(a, "nl.zeros_like")
    return zeros(a.shape, dtype if dtype is not None else a.dtype, buffer=buffer, name=name)


def empty_like(a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "",
               **_: Any) -> NkiTensor:
    """An uninitialised tensor with ``a``'s shape (and dtype unless given)."""
    _like(a, "nl.empty_like")
    return ndarray(a.shape, dtype if dtype is not None else a.dtype, buffer=buffer, name=name)


def shared_constant(constant: Any, dtype: Any = None, **_: Any) -> NkiTensor:
    """A constant HBM tensor holding ``constant`` (a numpy array)."""
    tr = _tracer.current("nl.shared_constant")
    try:
        values = np.asarray(constant)
    except (TypeError, ValueError) as e:
        raise tr.fail(KernelError, f"nl.shared_constant: expected a numpy array of numbers, "
                      f"found {type(constant).__name__} ({e})") from None
    if values.dtype.kind not in "biuf" or values.ndim == 0:
        raise tr.fail(KernelError, f"nl.shared_constant: expected a numpy array of numbers "
                      f"(at least 1-D), found {type(constant).__name__} of dtype {values.dtype}"
                      f" and shape {values.shape}")
    dt = _dt.to_dtype(dtype if dtype is not None else values.dtype, "nl.shared_constant dtype")
    decl = tr.new_tensor(MemSpace.HBM, values.shape, dt, kind="constant", name="const",
                         values=values.astype(dt))
    return NkiTensor.whole(decl)


def shared_identity_matrix(n: int, dtype: Any = _dt.uint8, **_: Any) -> NkiTensor:
    """An [n, n] identity matrix constant in HBM."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 1 << 16:
        raise _tracer.current("nl.shared_identity_matrix").fail(
            KernelError, f"nl.shared_identity_matrix: expected an integer size from 1 to 65536, "
                         f"found {n!r}")
    return shared_constant(np.eye(int(n)), dtype=dtype)


def fill(target: NkiTensor, value: Any) -> None:
    """``target[...] = scalar``: a memset of the region (VectorE). A region on an SBUF
    partition an engine access cannot start at (arch.md 1.5) gets a memset at partition 0 and
    an SBUF-to-SBUF DMA into place (DMAs are exempt)."""
    v = scalar_value(value, "assignment value")
    dst = target.partition_first()
    if dst.space is MemSpace.SBUF and start_partition_error(dst.access()):
        dma_move("assignment", dst, memset(dst.shape, v, dst.dtype), None, None)
        return
    issue_into("memset", Opcode.MEMSET, Engine.VECTOR, dst, {}, {"value": v},
               dst_spaces=(MemSpace.SBUF, MemSpace.PSUM))
