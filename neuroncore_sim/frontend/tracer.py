"""The tracer: records the instructions a kernel issues while it runs.

One :class:`Tracer` exists per kernel launch. It is made active with ``with tracer.active():``
(a ``ContextVar``, the one piece of module state, always reset by the ``with``). ``nl``/``nisa``
functions find it with :func:`current`, validate their operands, and hand it an instruction.

Values are computed eagerly: the tracer calls its optional value backend (the functional
executor, wired in by ``simulate``) right after recording each instruction, so ``print`` and
``nl.device_print`` inside a kernel see real numbers. With no backend (timing-only runs) no
numpy work is done at all.

The most recent instruction is held *pending* until the next one is issued or its result is
used. That lets ``t[...] = nisa.activation(...)`` write straight into ``t`` and
``psum += nisa.nc_matmul(...)`` accumulate in PSUM, as the NKI compiler does, instead of
recording an extra copy.

On-chip tiles hold their storage only while the kernel can still name them: every view of a tile
shares one *lease* object, and when the last view is gone the backend gets the tile's storage
back for the next tile (as the hardware reuses a loop's buffers). Without that, a functional run
of a tiled kernel would keep every tile it ever allocated in host memory.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import weakref
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

import numpy as np

from ..config import NeuronCoreConfig
from ..errors import (InputWriteWarning, SimulatorError, SimulatorWarning, UnsupportedError,
                      caller_loc)
from ..program.ir import (Access, Engine, Instruction, MemSpace, Opcode, Placement, Predicate,
                          Program, SourceLoc, TensorDecl)
from ..program.layout import geometry_memo, shared_attrs
from .limits import check_loop_nest, too_many
from .loopcheck import loop_carried_reads
from .index.mask_bool import leftover, pending_masks
from .index.view_cache import ViewCache
from .once_traced import entry_indices, restore_indices

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: ``Tracer.on_record`` is called once per this many recorded instructions.
RECORD_REPORT_EVERY = 256


class ValueBackend(Protocol):
    """What the tracer needs from a functional executor."""

    def declare(self, decl: TensorDecl, values: np.ndarray | None) -> None: ...

    def execute(self, ins: Instruction) -> None: ...

    def read(self, access: Access) -> np.ndarray: ...

    def release(self, decl: TensorDecl) -> None: ...


class Lease:
    """Shared by every view of one on-chip tile; its death frees the tile's storage."""

    __slots__ = ("__weakref__",)


def _lease_died(tracer: weakref.ref[Tracer], decl: TensorDecl, ref: weakref.ref) -> None:
    """The weak-reference callback of ``decl``'s lease: the tile's last view is gone. (It
    reaches the tracer through a weak reference: a strong one would make a reference cycle.)"""
    tr = tracer()
    if tr is not None:
        if tr._leases.get(decl) is ref:
            del tr._leases[decl]
        tr._dead.append(decl)


@dataclass(slots=True)
class PendingOp:
    """An instruction whose main destination is not fixed yet.

    ``box`` is the per-axis [lo, hi) of the output that the mask leaves active (None: all);
    the destination is shrunk to it when the instruction is finally recorded.
    """

    opcode: Opcode
    engine: Engine
    srcs: dict[str, Access]
    attrs: dict[str, object]
    extra_dsts: dict[str, Access]
    mask: Predicate | None
    box: tuple[tuple[int, int], ...] | None
    loc: SourceLoc | None
    result: object  # the NkiTensor handed to the kernel (its decl is set on materialisation)
    loops: tuple[tuple[int, int], ...] = ()  # affine_range iterations when it was issued
    #: the kernel chose the engine (engine=, or an instruction only one engine has); False when
    #: the front end picked it and may add a copy to reach a destination the engine cannot write
    engine_fixed: bool = True
    #: source role the destination also fills (``nl.loop_reduce``: the destination is the
    #: left operand of its ``tensor_tensor``); None for ordinary instructions
    reads_dst: str | None = None
    #: what to record instead when no destination is given and a fresh tile is allocated (an
    #: op that reads its destination has nothing to read then)
    fresh: PendingOp | None = None
    #: the kernel gave the output dtype (``dtype=``): assigned into a tile of another dtype,
    #: the result rounds to its own dtype and is then copied, not written straight in
    dtype_given: bool = False


_ACTIVE: ContextVar[Tracer | None] = ContextVar("neuroncore_sim_tracer", default=None)


def current(what: str = "this NKI call") -> Tracer:
    """The active tracer.

    Raises:
        SimulatorError: when called outside a kernel launch.
    """
    tracer = _ACTIVE.get()
    if tracer is None:
        if what == "this NKI call":
            what = _api_name() or what
        raise SimulatorError(
            f"{what} can only run inside a kernel launched through nki.jit, "
            "nki.simulate_kernel or neuroncore_sim.simulate", caller_loc())
    return tracer


def _api_name() -> str | None:
    """Name of the package function the user called (the outermost frame inside the package)."""
    frame = sys._getframe(2)
    name = None
    while frame is not None and frame.f_code.co_filename.startswith(_PKG_DIR):
        name = frame.f_code.co_name
        frame = frame.f_back  # type: ignore[assignment]
    return name


def _loop_frame() -> tuple[object, dict]:
    """The kernel frame running a traced-once loop (the caller of its first ``next``) and its
    index bindings at the loop's start (``once_traced.py``)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PKG_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    return frame, entry_indices(frame)


def active_or_none() -> Tracer | None:
    """The active tracer, or None outside a kernel."""
    return _ACTIVE.get()


def locate_in_kernel(error: SimulatorError) -> None:
    """Give an error raised without a location (by a helper that has no tracer at hand, like
    ``dtypes.to_dtype``) the innermost line of its traceback outside this package: the kernel
    line whose call failed."""
    if error.loc is not None:
        return
    found = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(_PKG_DIR):
            found = SourceLoc(code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    error.locate(str(found) if found is not None else None)


class Tracer:
    """Records one kernel launch into a :class:`Program`.

    Args:
        program: the program to append to.
        config: the hardware configuration (tile limits come from it).
        backend: the functional executor, or None for a timing-only run.
        on_record: called with the number of instructions recorded so far, every
            :data:`RECORD_REPORT_EVERY` instructions (a progress bar hook).
    """

    def __init__(self, program: Program, config: NeuronCoreConfig,
                 backend: ValueBackend | None = None,
                 on_record: Callable[[int], None] | None = None) -> None:
        self.program = program
        self.config = config
        self.backend = backend
        self.on_record = on_record
        self.grid: tuple[int, ...] = program.grid
        self.program_id: tuple[int, ...] = ()
        self.instance = 0
        self.pending: PendingOp | None = None
        #: warnings about the kernel, shown by ``simulate`` and kept on the launch
        self.warnings: list[SimulatorWarning] = []
        self._locs: dict[tuple[str, int], SourceLoc] = {}
        self._frame_locs: dict[tuple[int, int], tuple[object, SourceLoc]] = {}
        self._shared: dict[tuple[SourceLoc | None, int], TensorDecl] = {}
        self._shared_count = 0
        self._names: dict[str, int] = {}
        #: tile -> weak reference to its lease (the entry goes when the lease dies)
        self._leases: dict[TensorDecl, weakref.ref[Lease]] = {}
        self._weak_self = weakref.ref(self)
        #: tiles whose last view died, to hand back to the backend once no pending op reads them
        self._dead: list[TensorDecl] = []
        #: first kernel line writing each input tensor (name -> location), see :meth:`finish`
        self.input_writes: dict[str, SourceLoc | None] = {}
        #: state of nl helpers that span calls (random generator, loop_reduce accumulators)
        self.lang_state: dict[str, object] = {}
        #: the running nl.affine_range iterations, outermost first: (loop id, iteration)
        self.loops: tuple[tuple[int, int], ...] = ()
        #: the running loops NKI traces once (nl.affine_range and nl.sequential_range), outermost
        #: first: (loop line, iteration); see :meth:`traced_iteration`
        self.traced_loops: tuple[tuple[object, int], ...] = ()
        #: geometry memos of this launch's views (view_cache.py)
        self.view_cache = ViewCache()
        #: the kernel is compiled in its own order (ncc.skip_middle_end_transformations /
        #: no_reorder): affine loops are not reordered, so carried dependencies are not reported
        self.keeps_order = False
        #: instructions the launch may record, and the iterations of the running loop nest
        self.max_instructions = config.max_instructions_per_launch
        self.nest_iterations = int(np.prod(self.grid, dtype=np.int64))  # each instance traced

    @contextlib.contextmanager
    def active(self) -> Iterator[Tracer]:
        """Make this tracer the one ``nl``/``nisa`` calls record into (with a fresh memo of the
        IR's layouts and access bounds for the launch, program/layout.py, and its own list of
        pending ``and`` / ``or`` mask operands, mask_bool.py)."""
        token = _ACTIVE.set(self)
        try:
            with geometry_memo(), pending_masks():
                yield self
        finally:
            _ACTIVE.reset(token)

    def start_instance(self, instance: int, program_id: tuple[int, ...]) -> None:
        """Begin SPMD program instance ``instance`` with coordinates ``program_id``."""
        self.flush()
        self.instance = instance
        self.program_id = program_id
        self._shared_count = 0

    def affine_loop(self, iterations: range) -> Iterator[int]:
        """Iterate ``iterations`` as an ``nl.affine_range`` loop: instructions issued in it
        record which iteration they belong to (``Instruction.loops``)."""
        loop_id = len(self.program.loops)
        loc = self.user_loc()
        self.program.loops.append(loc)
        outer, traced, nest = self.loops, self.traced_loops, self.nest_iterations
        self.nest_iterations = check_loop_nest(len(iterations), nest, self.max_instructions, loc)
        frame, entry = _loop_frame()
        rebinds = True  # (until an iteration rebound none: once_traced.restore_indices)
        try:
            for k, value in enumerate(iterations):
                self.loops = outer + ((loop_id, k),)
                self.traced_loops = traced + ((loc, k),)
                if k and rebinds:
                    rebinds = restore_indices(frame, entry)
                yield value
        finally:
            self.loops = outer  # also on break / exceptions (the generator is closed)
            self.traced_loops, self.nest_iterations = traced, nest

    def sequential_loop(self, iterations: range) -> Iterator[int]:
        """Iterate ``iterations`` as an ``nl.sequential_range`` loop (see
        :meth:`traced_iteration`)."""
        loc = self.user_loc()
        traced, nest = self.traced_loops, self.nest_iterations
        self.nest_iterations = check_loop_nest(len(iterations), nest, self.max_instructions, loc)
        frame, entry = _loop_frame()
        rebinds = True
        try:
            for k, value in enumerate(iterations):
                self.traced_loops = traced + ((loc, k),)
                if k and rebinds:
                    rebinds = restore_indices(frame, entry)
                yield value
        finally:
            self.traced_loops, self.nest_iterations = traced, nest

    def traced_iteration(self) -> tuple[tuple[object, ...], bool]:
        """Where the kernel is in the loops NKI traces once: the lines of the running
        ``nl.affine_range`` / ``nl.sequential_range`` loops and whether this is a later
        iteration than the first of any of them. NKI runs such a loop's Python body once; the
        simulator runs it per iteration, so Python state the body changes (an address counter
        advanced by each direct allocation) must not drift between iterations."""
        return (tuple(loc for loc, _ in self.traced_loops),
                any(k for _, k in self.traced_loops))

    # --- source locations ----------------------------------------------------------------------
    def user_loc(self) -> SourceLoc | None:
        """The innermost stack frame outside this package: the kernel line being executed."""
        frame = sys._getframe(1)
        pkg = _PKG_DIR
        while frame is not None and frame.f_code.co_filename.startswith(pkg):
            frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            return None
        # By code object and bytecode offset: f_lineno decodes the line table on every call.
        # The cache holds the code object, so its id stays unique while the tracer lives.
        code = frame.f_code
        hit = self._frame_locs.get((id(code), frame.f_lasti))
        if hit is not None:
            return hit[1]
        key = (code.co_filename, frame.f_lineno)
        loc = self._locs.get(key)
        if loc is None:
            loc = self._locs[key] = SourceLoc(*key)
        self._frame_locs[(id(code), frame.f_lasti)] = (code, loc)
        return loc

    def fail(self, cls: type[SimulatorError], message: str) -> SimulatorError:
        """An error of type ``cls`` located at the current kernel line (to ``raise``)."""
        return cls(message, str(self.user_loc() or "") or None)

    def warn(self, category: type[SimulatorWarning], message: str) -> None:
        """Record a warning located at the current kernel line (shown by ``simulate``)."""
        loc = self.user_loc()
        self.warnings.append(category(f"{loc}: {message}" if loc else message))

    def note_write(self, decl: TensorDecl) -> None:
        """Remember a write into a kernel input tensor (judged by :meth:`finish`)."""
        if decl.kind == "input" and decl.name not in self.input_writes:
            self.input_writes[decl.name] = self.user_loc()

    def finish(self, returned: object) -> None:
        """End of the launch: report loop-carried dependencies in ``nl.affine_range`` loops
        (``loopcheck.py``), and warn when a kernel that returns its outputs writes its inputs
        (NKI allows writing inputs only in output-argument kernels)."""
        self.flush()
        where = leftover()
        if where is not None:
            raise UnsupportedError("'and' / 'or' between masks whose value never became an "
                                   "instruction's mask=; combine masks with & and |", where)
        if self.program.loops and not self.keeps_order:
            self.warnings.extend(loop_carried_reads(self.program))
        if returned is None or (isinstance(returned, (tuple, list)) and not returned):
            return
        for name, loc in self.input_writes.items():
            msg = (f"kernel writes its input tensor {name!r} but returns its outputs; NKI "
                   "allows writing into arguments only in output-argument kernels (return "
                   "nothing, or write a new nl.shared_hbm tensor)")
            self.warnings.append(InputWriteWarning(f"{loc}: {msg}" if loc else msg))

    # --- tensors -------------------------------------------------------------------------------
    def new_tensor(self, space: MemSpace, shape: tuple[int, ...], dtype: np.dtype, *,
                   partition_axis: int = 0, kind: str = "tile", name: str | None = None,
                   values: np.ndarray | None = None, site: SourceLoc | None = None,
                   placement: Placement | None = None) -> TensorDecl:
        """Declare a tensor in the program and to the value backend."""
        site = site if site is not None else self.user_loc()
        if kind == "output":
            # Every SPMD instance allocates "the same" shared_hbm output: one tensor for all.
            key = (site, self._shared_count)
            self._shared_count += 1
            if key in self._shared:
                return self._shared[key]
        base = name or ("t" if space is not MemSpace.HBM else "hbm")
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        decl = TensorDecl(len(self.program.tensors), base if n == 0 and name else f"{base}{n}",
                          space, tuple([int(s) for s in shape]), dtype, partition_axis, kind, site,
                          placement)
        self.program.tensors.append(decl)
        if kind == "output":
            self._shared[(site, self._shared_count - 1)] = decl
        if self.backend is not None:
            self.backend.declare(decl, values)
        return decl

    # --- instructions --------------------------------------------------------------------------
    def record(self, opcode: Opcode, engine: Engine, dsts: dict[str, Access],
               srcs: dict[str, Access], attrs: dict[str, object], *,
               mask: Predicate | None = None, loc: SourceLoc | None = None) -> Instruction:
        """Append an instruction with fixed destinations and execute it on the backend."""
        if self.pending is not None:
            self.flush()
        return self._append(opcode, engine, dsts, srcs, attrs, mask,
                            loc if loc is not None else self.user_loc(), self.loops)

    def _append(self, opcode: Opcode, engine: Engine, dsts: dict[str, Access],
                srcs: dict[str, Access], attrs: dict[str, object], mask: Predicate | None,
                loc: SourceLoc | None, loops: tuple[tuple[int, int], ...]) -> Instruction:
        if len(self.program.instructions) >= self.max_instructions:
            raise too_many(self.max_instructions, loc, self.traced_loops)
        ins = Instruction(len(self.program.instructions), opcode, engine, dsts, srcs,
                          shared_attrs(attrs), loc, mask, self.instance, loops)
        self.program.instructions.append(ins)
        if self.on_record is not None and not (ins.id + 1) % RECORD_REPORT_EVERY:
            self.on_record(ins.id + 1)
        if self.backend is not None:
            self.backend.execute(ins)
            if self._dead:
                self._release_dead()
        return ins

    # --- storage of dead tiles -------------------------------------------------------------------
    def lease(self, decl: TensorDecl) -> Lease | None:
        """The lease every view of ``decl`` must hold (None for HBM tensors, kernel arguments
        and timing-only runs, whose storage is never handed back)."""
        if self.backend is None or decl.space is MemSpace.HBM or decl.kind != "tile":
            return None
        ref = self._leases.get(decl)
        token = ref() if ref is not None else None
        if token is None:
            token = Lease()
            # A plain weak reference whose callback reports the death (a tile's lease is made
            # on the tracing path of every functional run: weakref.finalize and a
            # WeakValueDictionary cost several times more).
            self._leases[decl] = weakref.ref(
                token, functools.partial(_lease_died, self._weak_self, decl))
        return token

    def _release_dead(self) -> None:
        """Give the backend the storage of tiles no view names any more, except those the
        pending op still uses."""
        op = self.pending
        keep = ({a.tensor for a in (*op.srcs.values(), *op.extra_dsts.values())}
                if op is not None else ())
        dead, self._dead[:] = list(self._dead), []
        for decl in dead:
            if decl in keep:
                self._dead.append(decl)
            else:
                self.backend.release(decl)  # type: ignore[union-attr]

    def set_pending(self, op: PendingOp) -> None:
        """Hold ``op`` until its destination is known (see module docstring)."""
        if self.pending is not None:
            self.flush()
        op.loops = self.loops  # it belongs to this iteration even if recorded later
        self.pending = op

    def take_pending(self, result: object) -> PendingOp | None:
        """Remove and return the pending op if ``result`` is its output, else None."""
        op = self.pending
        if op is not None and op.result is result:
            self.pending = None
            return op
        return None

    def complete(self, op: PendingOp, dst: Access, **attrs: object) -> Instruction:
        """Record a pending op with its destination ``dst`` (already shrunk to ``op.box``)."""
        merged = dict(op.attrs)
        merged.update(attrs)
        dsts = {"out": dst}
        dsts.update(op.extra_dsts)
        srcs = op.srcs if op.reads_dst is None else {op.reads_dst: dst, **op.srcs}
        return self._append(op.opcode, op.engine, dsts, srcs, merged, op.mask, op.loc,
                            op.loops)

    def flush(self) -> None:
        """Record the pending op into its own freshly allocated tile."""
        op = self.pending
        if op is None:
            return
        self.pending = None
        op.result.materialize(self, op)  # type: ignore[attr-defined]

    def read(self, access: Access) -> np.ndarray | None:
        """Current values of a region (None in a timing-only run)."""
        self.flush()
        if self.backend is None:
            return None
        return self.backend.read(access)
