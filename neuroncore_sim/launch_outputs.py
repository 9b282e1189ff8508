"""What a finished launch hands back: its outputs, and whether it wrote them.

Returned HBM tensors (or the written argument arrays of an output-argument kernel) become numpy
arrays; views (``return out.reshape(...)``) give the values they select. A returned tensor that
no instruction wrote, or that was written only in part (timing-only runs: when its writes hold
fewer elements than it), gives an :class:`~neuroncore_sim.errors.UnwrittenOutputWarning` at the
kernel's ``def`` line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import KernelError, ReturnValueWarning, UnwrittenOutputWarning
from .frontend import tracer as _tracer
from .frontend.tensors.tensor import NkiTensor
from .program.ir import Access, MemSpace
from .program.layout import tensor_elements
from .values.execute import Executor
from .values.memory import reinterpret
from .values.fast.pipeline import PipelinedExecutor


def collect_outputs(tr: _tracer.Tracer, executor: PipelinedExecutor | Executor | None, returned: Any,
             user_arrays: dict[int, np.ndarray], def_loc: str | None) -> tuple[Any, ...]:
    """Outputs: the returned tensors' values; written argument arrays are updated in place.
    ``def_loc`` (the kernel's ``def`` line) locates a bad return value."""
    items = returned if isinstance(returned, (tuple, list)) else (
        () if returned is None else (returned,))
    # Only argument arrays can need the written-tensor set, and only when there are values to
    # copy back or nothing is returned; skip the scan otherwise (large programs record tens of
    # thousands of instructions).
    written = ({a.tensor.id for ins in tr.program.instructions for a in ins.dsts.values()
                if a.tensor.id in user_arrays}
               if user_arrays and (executor is not None or not items) else set())
    taken: dict[int, np.ndarray] = {}

    def values(decl):  # the end of the launch: storage is handed over, copied only if repeated
        if decl.id in taken:
            return taken[decl.id].copy()
        taken[decl.id] = executor.take(decl)
        return taken[decl.id]

    if executor is not None:
        for tid, arr in user_arrays.items():
            if tid in written:
                np.copyto(arr, values(tr.program.tensors[tid]), casting="unsafe")
    outs: list[Any] = []
    for item in items:
        if isinstance(item, NkiTensor):
            if item.space is not MemSpace.HBM:
                made = item.tensor.site
                raise KernelError(
                    f"kernel return value: expected HBM tensors (nl.ndarray(..., "
                    f"buffer=nl.shared_hbm), written with nl.store), found a tile in "
                    f"{item.space.value}" + (f" made at {made}" if made else ""), def_loc)
            _check_written(tr, executor, item, def_loc)
            outs.append(_view_values(item, values(item.tensor)) if executor is not None
                        else None)
        else:
            _warn(tr, def_loc, f"kernel return value {item!r} ({type(item).__name__}) is not "
                  "an HBM tensor: a device launch returns the HBM tensors the kernel wrote "
                  "(nl.ndarray(..., buffer=nl.shared_hbm)); this value is handed back as is")
            outs.append(item)
    if not items:
        outs = [user_arrays[t] for t in sorted(user_arrays) if t in written]
        if not outs:
            _warn_lost_writes(tr, def_loc)
    return tuple(outs)


def _warn(tr: _tracer.Tracer, def_loc: str | None, msg: str) -> None:
    tr.warnings.append(ReturnValueWarning(f"{def_loc}: {msg}" if def_loc else msg))


def _warn_lost_writes(tr: _tracer.Tracer, def_loc: str | None) -> None:
    """The kernel returns nothing and writes no argument: HBM tensors it made and wrote are
    lost (a ReturnValueWarning naming them)."""
    made = {}
    for ins in tr.program.instructions:
        for a in ins.dsts.values():
            t = a.tensor
            if t.kind == "output" and t.id not in made:  # nl.shared_hbm made by the kernel
                made[t.id] = t
    if made:
        names = ", ".join(f"{t.name}" + (f" (allocated at {t.site})" if t.site else "")
                          for t in list(made.values())[:3])
        _warn(tr, def_loc, f"kernel returns nothing but writes HBM tensors of its own: {names}; "
              "expected them returned (return out), found them lost when the launch ends")


def _check_written(tr: _tracer.Tracer, executor: PipelinedExecutor | Executor | None,
                   item: NkiTensor, def_loc: str | None) -> None:
    """Warn (UnwrittenOutputWarning, at the kernel's def line) when a returned tensor was never
    written, or written only in part (timing-only runs: :func:`_surely_unwritten`)."""
    decl = item.tensor
    where = f" (allocated at {decl.site})" if decl.site is not None else ""
    writes = [a for ins in tr.program.instructions for a in ins.dsts.values() if a.tensor is decl]
    total = int(np.prod(item.shape))
    if not writes:
        missing = "never written"
    elif executor is not None:
        left = executor.checks.unwritten(item.access())
        if left is None:
            return
        count = total if left is True else int(np.count_nonzero(left))
        missing = f"written only in part: {count} of its {total} elements never written"
    else:
        count = _surely_unwritten(item.access(), writes)
        if not count:
            return
        missing = f"written only in part: {count} of its {total} elements never written"
    msg = (f"kernel return value {decl.name}{where} is {missing}; expected every element "
           f"written (nl.store into it), found garbage on the hardware (NaN here)")
    tr.warnings.append(UnwrittenOutputWarning(f"{def_loc}: {msg}" if def_loc else msg))


def _surely_unwritten(region: Access, writes: list[Access]) -> int:
    """Timing-only runs (no values to look at): the elements of ``region`` no write covers,
    counted only when the writes hold fewer elements than the region, so that some are surely
    missing (a loop that stops short: ``N // 2048`` blocks of an ``N = 3072`` output); 0
    otherwise. Overlapping writes that leave gaps are not looked for: that would cost a pass
    over every written element of every launch, and a false warning is worse than none."""
    if sum(a.nbytes for a in writes) >= region.nbytes:
        return 0
    covered = np.zeros(int(np.prod(region.tensor.shape)), dtype=bool)
    for a in writes:
        covered[_flat_indices(a)] = True
    return int(np.count_nonzero(~covered[_flat_indices(region)]))


def _flat_indices(a: Access) -> np.ndarray:
    """Storage indices, in the tensor's own elements, of the elements ``a`` touches (through a
    dtype view of another size, every tensor element it overlaps)."""
    isz = a.tensor.itemsize
    return tensor_elements(a.offset, a.pattern, isz, a.dtype.itemsize).reshape(-1)


def _view_values(view: NkiTensor, whole: np.ndarray) -> np.ndarray:
    """The values a returned HBM view selects (``return out.reshape(...)``, a slice, a
    ``view(dtype)``): the whole tensor's array when it is the whole tensor as declared."""
    acc = view.access()
    decl = view.tensor
    if (acc.view_dtype is None and acc.offset == 0 and acc.shape == tuple(decl.shape)
            and acc.pattern == tuple(zip(decl.strides, decl.shape))):
        return whole
    flat = np.ascontiguousarray(whole).reshape(-1)  # HBM storage is C order
    if acc.view_dtype is not None:
        flat = reinterpret(flat, acc.view_dtype)
    isz = flat.itemsize
    return np.ndarray(acc.shape, flat.dtype, flat, acc.offset * isz,
                      [st * isz for st, _ in acc.pattern]).copy()
