"""``nki.compiler`` (ncc): allocation and compiler-directive helpers.

``ncc.sbuf.auto_alloc()`` / ``ncc.psum.auto_alloc()`` are the default allocators (``nl.sbuf``
and ``nl.psum``). Direct allocation (the NKI Direct Allocation Developer Guide) is a ``buffer=``
that places every logical tile of a tensor itself:

* ``ncc.sbuf.alloc(func)``: ``func(idx, pdim_size, fdim_size) -> (start_partition, byte_addr)``
  for each block index ``idx`` (a tuple, one int per block dim), ``pdim_size`` partitions and
  ``fdim_size`` bytes per partition of one tile;
* ``ncc.psum.alloc(func)``: the same returning ``(bank_id, start_partition, byte_addr)``;
* ``ncc.sbuf.mod_alloc(base_addr=, base_partition=0, num_par_tiles=(), num_free_tiles=())`` and
  ``ncc.psum.mod_alloc(base_bank=, base_addr=0, base_partition=0, num_bank_tiles=(), ...)``:
  modulo allocation, block index ``i`` (per block dim) going to physical tile ``i % n``.

``nl.ndarray`` evaluates the placement of every tile (:func:`placement`), checks it against the
hardware (start-partition rule, SBUF usable bytes, PSUM banks) and records it on the tensor
(``ir.Placement``). The timing model then uses the physical addresses: tiles placed on
overlapping memory alias and serialise, whatever tensor they belong to. Values stay per logical
tile (a kernel reading a tile whose memory another tile overwrote gets the logical values).

The compiler directives (``skip_middle_end_transformations`` and friends) change how the real
compiler optimises, not what a kernel computes, so they are accepted and change nothing.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable

import numpy as np

from ..errors import AllocationWarning, CapacityError, KernelError, caller_loc
from ..program.ir import MemSpace, Placement
from . import alloc as _alloc
from . import tracer as _tracer


class DirectBuffer(_alloc.Buffer):
    """A ``buffer=`` that places each logical tile: ``func(idx, pdim_size, fdim_size)``."""

    def __init__(self, name: str, space: MemSpace, func: Callable[..., Any]) -> None:
        super().__init__(name, space, "tile")
        self.func = func

    def place(self, tr: _tracer.Tracer, dims: tuple[int, ...], pa: int,
              itemsize: int) -> Placement:
        """Each logical tile where ``func`` puts it, checked (:func:`placement`)."""
        return placement(tr, self, dims, pa, itemsize)

    def __repr__(self) -> str:
        return f"ncc.{self.name}"


def _modulo(base: int, counts: tuple[int, ...], scale: int, idx: tuple[int, ...],
            what: str = "") -> int:
    """The reference's modulo allocation (``nki.compiler.sbuf.mod_alloc``, SDK 2.26):
    ``base + scale * linearize(counts, idx % counts)``, pairing block dims and counts as
    ``zip`` does; empty ``counts`` means one physical tile per block dim (every block on the
    same tile). The docs ask for one count per block dim, but AWS's own tutorials pass ``(1,)``
    for a tensor without block dims, which the reference formula accepts, so we do too."""
    if not isinstance(counts, (tuple, list)) or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0
            for n in counts):
        raise _tracer.current().fail(
            KernelError, f"{what}: expected a tuple of positive integer tile counts, found "
            f"{counts!r}")
    counts = tuple(counts) or (1,) * len(idx)
    pos = 0
    for d, (i, n) in enumerate(zip(idx, counts)):
        pos += (int(i) % int(n)) * math.prod(int(c) for c in counts[d + 1:])
    return int(base) + pos * scale


class _Allocator:
    def __init__(self, buffer: _alloc.Buffer) -> None:
        self._buffer = buffer

    def auto_alloc(self) -> _alloc.Buffer:
        """The compiler-managed allocator: the same as passing ``nl.sbuf`` / ``nl.psum``."""
        return self._buffer

    def alloc(self, func: Callable[..., Any]) -> DirectBuffer:
        """Direct allocation: ``func`` places each logical tile (see the module docstring)."""
        if not callable(func):
            raise KernelError(f"ncc.{self._buffer.name}.alloc: expected a callable "
                              f"func(idx, pdim_size, fdim_size), found {type(func).__name__}")
        return DirectBuffer(f"{self._buffer.name}.alloc", self._buffer.space, func)


class _SbufAllocator(_Allocator):
    def mod_alloc(self, *, base_addr: int, base_partition: int = 0,
                  num_par_tiles: tuple[int, ...] = (),
                  num_free_tiles: tuple[int, ...] = ()) -> DirectBuffer:
        """Modulo allocation from byte ``base_addr`` (and partition ``base_partition``)."""
        def func(idx: tuple[int, ...], pdim: int, fdim: int) -> tuple[int, int]:
            return (_modulo(base_partition, num_par_tiles, pdim, idx,
                            "ncc.sbuf.mod_alloc num_par_tiles"),
                    _modulo(base_addr, num_free_tiles, fdim, idx,
                            "ncc.sbuf.mod_alloc num_free_tiles"))
        return DirectBuffer("sbuf.mod_alloc", MemSpace.SBUF, func)


class _PsumAllocator(_Allocator):
    def mod_alloc(self, *, base_bank: int, base_addr: int = 0, base_partition: int = 0,
                  num_bank_tiles: tuple[int, ...] = (), num_par_tiles: tuple[int, ...] = (),
                  num_free_tiles: tuple[int, ...] = ()) -> DirectBuffer:
        """Modulo allocation over banks from ``base_bank`` (one tile per bank)."""
        def func(idx: tuple[int, ...], pdim: int, fdim: int) -> tuple[int, int, int]:
            return (_modulo(base_bank, num_bank_tiles, 1, idx, "ncc.psum.mod_alloc num_bank_tiles"),
                    _modulo(base_partition, num_par_tiles, pdim, idx,
                            "ncc.psum.mod_alloc num_par_tiles"),
                    _modulo(base_addr, num_free_tiles, fdim, idx,
                            "ncc.psum.mod_alloc num_free_tiles"))
        return DirectBuffer("psum.mod_alloc", MemSpace.PSUM, func)


sbuf = _SbufAllocator(_alloc.sbuf)
psum = _PsumAllocator(_alloc.psum)


_ALLOC_PARAMS = ("idx", "pdim_size", "fdim_size")


def _allocation_call(tr: _tracer.Tracer, func: Any, what: str) -> Any:
    """How to call an allocation function: by the documented keywords when it takes them (so
    ``functools.partial(f, bank_map=...)`` of ``f(bank_map, idx, pdim_size, fdim_size)``
    works), else positionally (``lambda i, p, f: ...``)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a signature: positional
        return func
    try:
        sig.bind(**dict(zip(_ALLOC_PARAMS, (0, 0, 0))))
        return lambda idx, pdim, fdim: func(idx=idx, pdim_size=pdim, fdim_size=fdim)
    except TypeError:
        pass
    try:
        sig.bind(0, 0, 0)
    except TypeError:
        raise tr.fail(KernelError, f"{what}: the allocation function must take (idx, "
                      f"pdim_size, fdim_size); found signature {sig}") from None
    return func


def placement(tr: _tracer.Tracer, buf: DirectBuffer, dims: tuple[int, ...], pa: int,
              itemsize: int) -> Placement:
    """Evaluate ``buf.func`` for every logical tile of a (B..., P, F...) tensor and check it.

    Raises:
        CapacityError: a negative byte_addr, a bank past the PSUM banks or a tile past
            partition 128 (a tile past the end of a partition is an AllocationWarning).
        KernelError: a malformed result or a start partition the hardware cannot address.
    """
    cfg, what = tr.config, f"ncc.{buf.name}"
    pdim = dims[pa]
    fdim = math.prod(dims[pa + 1:]) * itemsize
    arity = 2 if buf.space is MemSpace.SBUF else 3
    tiles = []
    past: list[tuple[tuple[int, ...], int]] = []  # SBUF blocks past the partition's end
    size = cfg.sbuf_bytes_per_partition
    call = _allocation_call(tr, buf.func, what)
    for idx in np.ndindex(*dims[:pa]):
        idx = tuple(int(i) for i in idx)
        loc = call(idx, pdim, fdim)
        if (not isinstance(loc, (tuple, list)) or len(loc) != arity
                or not all(isinstance(v, (int, np.integer)) for v in loc)):
            form = "(start_partition, byte_addr)" if arity == 2 else \
                "(bank_id, start_partition, byte_addr)"
            raise tr.fail(KernelError, f"{what}: the allocation function must return {form} "
                          f"as ints; for block {idx} found {loc!r}")
        loc = tuple(int(v) for v in loc)
        if arity == 3:
            bank, part, addr = loc
            if not 0 <= bank < cfg.psum_num_banks:
                raise tr.fail(CapacityError, f"{what}: block {idx}: expected a PSUM bank "
                              f"0..{cfg.psum_num_banks - 1}, found bank {bank}")
            if part or addr:
                raise tr.fail(KernelError, f"{what}: block {idx}: expected start_partition 0 "
                              f"and byte_addr 0 (one tile per PSUM bank, NKI docs), found "
                              f"{part} and {addr}")
            tiles.append((part, bank * cfg.psum_bank_bytes + addr))
            continue
        part, addr = loc
        allowed = (0,) if pdim > 64 else (0, 64) if pdim > 32 else (0, 32, 64, 96)
        if part not in allowed:
            raise tr.fail(KernelError, f"{what}: block {idx}: a tile of {pdim} partitions must "
                          f"start at partition {' or '.join(map(str, allowed))}; found {part}")
        # The guide bounds byte_addr, the tile's start, to [0, 192KiB-16KiB), but AWS's own
        # allocated attention kernel (nki-samples, run on the hardware) starts tiles at 181232
        # and 183328: the compiler does not enforce the documented bound. A tile that does not
        # lie within the physical partition is a warning, not an error: the bytes past the end
        # do not exist on the hardware, and the simulator gives them storage of their own
        # (docs/model.md). (An allocator object kept across kernel calls keeps counting:
        # addresses are what the function returned.)
        if addr < 0:
            raise tr.fail(CapacityError, f"{what}: block {idx}: byte_addr {addr}; expected "
                          f"0 <= byte_addr")
        if addr + fdim > size:
            past.append((idx, addr))
        tiles.append((part, addr))
    if past:
        idx, addr = past[0]
        more = f" (and {len(past) - 1} more of its {len(tiles)} blocks)" if len(past) > 1 else ""
        tr.warn(AllocationWarning, f"{what}: block {idx}{more}: a tile of {fdim} bytes per "
                f"partition at byte_addr {addr} ends at {addr + fdim}, past the {size} bytes of an "
                f"SBUF partition: on the hardware those bytes do not exist (the simulator gives "
                f"them storage of their own)")
    return Placement(tuple(tiles), pdim, fdim)


def _directive(fn: Callable[..., Any] | None = None, **_: Any) -> Any:
    """A compiler directive: returns the kernel unchanged."""
    if fn is None:
        return lambda f: f
    return fn


def _keeps_order(fn: Callable[..., Any] | None = None, **_: Any) -> Any:
    """A directive under which the compiler keeps the kernel's instruction order (no middle-end
    transformations, no reordering): returns the kernel unchanged, marked so that loop-carried
    dependencies in its ``nl.affine_range`` loops are not reported (the reordering they warn
    of does not happen; AWS's hand-pipelined attention kernels rely on it)."""
    def mark(f: Any) -> Any:
        target = getattr(f, "func", f)  # an nki.jit kernel, or the plain function
        if not callable(target) or not hasattr(target, "__dict__"):
            raise KernelError(f"ncc directive: expected a kernel function to decorate, found "
                              f"{type(f).__name__}", caller_loc())
        target._ncs_keeps_order = True
        return f
    return mark if fn is None else mark(fn)


skip_middle_end_transformations = _keeps_order
no_reorder = _keeps_order
enable_stack_allocator = _directive
force_auto_alloc = _directive


def multi_buffer(n: int) -> int:
    """Accepted for compatibility: the buffer count hint of a loop."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise KernelError(f"ncc.multi_buffer: expected a positive integer buffer count, found "
                          f"{n!r}", caller_loc())
    return int(n)
