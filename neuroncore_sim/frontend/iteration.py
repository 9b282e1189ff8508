"""``nl``'s loops (``affine_range``, ``sequential_range``, ``static_range``) and the SPMD launch
grid (``program_id``, ``num_programs``, ``program_ndim``, ``nc``, ``spmd_dim``).

Inside a kernel, ``affine_range`` and ``sequential_range`` hand their iterations to the tracer,
which tags instructions with their affine iteration (for the loop-dependency check) and knows
which loop body NKI would have traced only once (``Tracer.traced_iteration``).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from ..errors import KernelError
from . import tracer as _tracer
from .limits import check_loop_nest


def _loop(what: str, args: tuple[Any, ...]) -> range:
    # like Python's range, integers only: `nl.affine_range(n / 128)` must not truncate
    for a in args:  # (plain ints, the usual bounds, go straight to range)
        if type(a) is not int:
            break
    else:
        if 1 <= len(args) <= 3 and (len(args) < 3 or args[2] != 0):
            return range(*args)
    if not 1 <= len(args) <= 3 or not builtins.all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) \
            or (len(args) == 3 and args[2] == 0):
        tr = _tracer.active_or_none()
        msg = (f"{what}: expected 1 to 3 integer bounds (stop, or start, stop[, step != 0]), "
               f"found {list(args)!r}")
        raise tr.fail(KernelError, msg) if tr is not None else KernelError(msg)
    from .alloc import par_dim
    marked = [a for a in args if isinstance(a, par_dim)]
    if marked:  # an int subclass: Python's range would take it silently
        tr = _tracer.active_or_none()
        msg = (f"{what}: expected integer bounds, found nl.par_dim({int(marked[0])}); "
               f"nl.par_dim marks the partition dim of a tile's shape "
               f"(nl.ndarray((nl.par_dim(128), 512), ...)), not a loop bound: write "
               f"{what}({int(marked[0])})")
        raise tr.fail(KernelError, msg) if tr is not None else KernelError(msg)
    return range(*(int(a) for a in args))


def affine_range(*args: int, **_: Any) -> Any:
    """A loop whose iterations are independent (the compiler may pipeline them); inside a
    kernel, the instructions of each iteration are tagged with it, so reads of what an earlier
    iteration wrote can be reported (``loopcheck.py``)."""
    iterations = _loop("nl.affine_range", args)
    tr = _tracer.active_or_none()
    return iterations if tr is None else _TracedRange(tr, iterations, tr.affine_loop)


class _TracedRange:
    """``nl.affine_range`` / ``nl.sequential_range`` inside a kernel: iterates (and has a
    ``len``) like its range, and each ``for`` over it is one loop the tracer follows
    (:meth:`Tracer.affine_loop`, :meth:`Tracer.sequential_loop`)."""

    def __init__(self, tr: _tracer.Tracer, iterations: range,
                 loop: Callable[[range], Any]) -> None:
        self._iterations, self._loop = iterations, loop

    def __len__(self) -> int:
        return len(self._iterations)

    def __iter__(self) -> Any:
        return self._loop(self._iterations)


def sequential_range(*args: int, **_: Any) -> Any:
    """A loop with loop-carried dependencies, run in order (inside a kernel, an iterable with
    a ``len`` whose body, as NKI's, is traced once: see ``Tracer.traced_iteration``)."""
    iterations = _loop("nl.sequential_range", args)
    tr = _tracer.active_or_none()
    return iterations if tr is None else _TracedRange(tr, iterations, tr.sequential_loop)


def static_range(*args: int, **_: Any) -> range:
    """A loop fully unrolled at trace time (inside a kernel, refused at once when its
    iterations alone exceed max_instructions_per_launch: see limits.py)."""
    iterations = _loop("nl.static_range", args)
    tr = _tracer.active_or_none()
    if tr is not None:
        check_loop_nest(len(iterations), tr.nest_iterations, tr.max_instructions, tr.user_loc())
    return iterations


def program_id(axis: int) -> int:
    """This instance's index along grid ``axis``."""
    tr = _tracer.current("nl.program_id")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise tr.fail(KernelError, f"nl.program_id: expected an integer axis, found {axis!r}")
    axis = int(axis)
    if axis < 0:
        raise tr.fail(KernelError, f"nl.program_id: expected a non-negative axis, found {axis}")
    # Axes past the launch grid behave as size-1 grid dims (a kernel written for a 2-D grid
    # also runs without one).
    return tr.program_id[axis] if axis < len(tr.program_id) else 0


def num_programs(axes: Any = None) -> int:
    """Number of instances along ``axes`` (all axes when None)."""
    tr = _tracer.current("nl.num_programs")
    grid = tr.grid
    if axes is None:
        return int(np.prod(grid)) if grid else 1
    axes = axes if isinstance(axes, (tuple, list)) else (axes,)
    if not builtins.all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) and a >= 0
                        for a in axes):
        raise tr.fail(KernelError, f"nl.num_programs: expected non-negative integer axes, "
                      f"found {axes!r}")
    return int(np.prod([grid[int(a)] if int(a) < len(grid) else 1 for a in axes]))


def _grid_size(n: Any, what: str) -> int:
    """A grid dim size: a positive int, an ``nl.nc`` or an ``nl.spmd_dim``."""
    size = n.size if isinstance(n, (nc, spmd_dim)) else n
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) \
            or int(size) < 1:
        msg = f"{what}: expected a positive int, nl.nc(n) or nl.spmd_dim(...), found {n!r}"
        tr = _tracer.active_or_none()
        raise tr.fail(KernelError, msg) if tr is not None else KernelError(msg)
    return int(size)


class _GridDim:
    """Product of grid dims: ``nl.nc(2) * 2`` is ``nl.spmd_dim(nl.nc(2), 2)`` and
    ``2 * nl.nc(2)`` is ``nl.spmd_dim(2, nl.nc(2))`` (the docs' syntactic sugar)."""

    size: int

    def __mul__(self, other: Any) -> spmd_dim:
        return spmd_dim(self, other)

    def __rmul__(self, other: Any) -> spmd_dim:
        return spmd_dim(other, self)


class nc(_GridDim):  # noqa: N801
    """``nl.nc(n)``: a grid dim spread over n physical NeuronCores; simulated as a plain grid
    dim of size n (instances run one after another on one core, so which core runs which
    instance changes no result)."""

    def __init__(self, n: int) -> None:
        self.size = _grid_size(n, "nl.nc")

    def __repr__(self) -> str:
        return f"nl.nc({self.size})"


class spmd_dim(_GridDim):  # noqa: N801
    """``nl.spmd_dim(nl.nc(2), 2)``: a grid dim whose size is the product of its parts."""

    def __init__(self, *parts: Any) -> None:
        if not parts:
            _grid_size(None, "nl.spmd_dim")
        self.parts = parts
        self.size = int(np.prod([_grid_size(p, "nl.spmd_dim") for p in parts]))

    def __repr__(self) -> str:
        return f"nl.spmd_dim({', '.join(map(repr, self.parts))})"


def program_ndim() -> int:
    """Number of grid dims."""
    return len(_tracer.current("nl.program_ndim").grid)
