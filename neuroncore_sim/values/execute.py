"""The reference executor: every recorded instruction's values from the spec alone.

The front end calls :meth:`Executor.execute` right after recording each instruction, so values
exist while the kernel runs (``print``, ``pdb`` and ``nl.device_print`` work inside kernels).
For each instruction the executor gathers strided views of the sources (``memory.py``), calls the
opcode's meaning (``semantics/``, ``nc_matmul`` included), casts each result to its
destination's dtype (``dtypes.cast``) and writes it in place, honouring the instruction mask,
PSUM accumulation (one instruction at a time, in fp32, as the hardware does), DMA
read-modify-write and the activation accumulator registers. Nothing is deferred, nothing runs in
another thread.

This is the executable specification run as written. Functional runs use its subclass
:class:`~neuroncore_sim.values.fast.executor.FastExecutor`, which gives the same values faster;
``simulate(..., reference=True)`` runs this one, and the differential tests compare the two.

The executor knows nothing about time; the timing model never sees these values.
"""

from __future__ import annotations

import numpy as np

from .checks import ValueChecks
from ..config import NeuronCoreConfig
from ..dtypes import cast, dtype_name, float32, is_float
from ..errors import KernelError, ShapeError, SimulatorError, UnsupportedError, expected
from ..program.ir import Access, Engine, Instruction, MemSpace, Opcode, TensorDecl
from .memory import Memory
from .semantics import SEMANTICS, Out, accumulate, canon

#: Values of ``reduce_cmd`` (nki.isa.reduce_cmd) the activation accumulators support.
REDUCE_CMDS = frozenset({"idle", "reset", "reduce", "reset_reduce"})
_RESETS = frozenset({"reset", "reset_reduce"})
_REDUCES = frozenset({"reduce", "reset_reduce"})
ACTIVATIONS = frozenset({Opcode.ACTIVATION, Opcode.ACTIVATION_REDUCE})
#: Opcodes that use their engine's accumulator registers.
REGISTER_OPS = ACTIVATIONS | {Opcode.SELECT_REDUCE}


def reduce_cmd_name(value: object) -> str:
    """Normalise a reduce_cmd attr (a ``nki.isa.reduce_cmd`` member or its name) to its name."""
    return str(getattr(value, "name", value))


class Executor:
    """Holds the memory of one kernel launch and executes instructions on it, one at a time,
    each through its opcode's function in ``SEMANTICS``.

    Args:
        config: the simulated NeuronCore (its partition count sizes the accumulator registers).
    """

    def __init__(self, config: NeuronCoreConfig) -> None:
        self.config = config
        self.memory = Memory()
        self._checks = ValueChecks()
        #: Activation accumulator registers, one fp32 register per lane, per engine.
        self._registers: dict[Engine, np.ndarray] = {}
        #: Tensors of dtype tfloat32 (their float32 storage hides the rounding a write needs).
        self._tf32: set[TensorDecl] = set()

    # --- the protocol the front end uses ---------------------------------------------------------

    def declare(self, decl: TensorDecl, values: np.ndarray | None) -> None:
        """Allocate ``decl``, initialised from ``values`` (declared shape) or NaN / 0."""
        self.memory.declare(decl, values)
        self._checks.declare(decl, values is not None)
        if dtype_name(decl.dtype) == "tfloat32":  # stored as float32 but rounded on every write
            self._tf32.add(decl)

    @property
    def checks(self) -> ValueChecks:
        """Unwritten-memory and activation-range checks; their warnings (checks.py)."""
        self.settle()
        return self._checks

    def execute(self, ins: Instruction) -> None:
        """Compute ``ins`` and write its destinations.

        Raises:
            SimulatorError: a subclass naming the instruction's kernel line when an operand is
                out of bounds, shapes do not fit, or an operator or dtype is not allowed.
        """
        fn = self._semantic(ins)
        with self._located(ins):
            self._start_accumulation(ins)
            self._checks.before(ins, self.memory.view)
            for a in ins.dsts.values():
                self._will_write(a)
            self._compute(ins, fn)

    def settle(self) -> None:
        """Compute everything recorded so far (here: nothing is ever pending)."""

    def read(self, access: Access) -> np.ndarray:
        """A copy of the region ``access`` selects (shape ``access.shape``, the tensor's dtype;
        tfloat32 reads as float32)."""
        self.settle()
        return self.memory.view(access).copy()

    def write(self, access: Access, values: np.ndarray) -> None:
        """Overwrite the region ``access`` selects with ``values`` (cast to the tensor's dtype;
        same shape, same number of elements, or broadcastable)."""
        self.settle()
        dst = self.memory.view_for_write(access)
        arr = np.asarray(values)
        if arr.shape != dst.shape and arr.size == dst.size:
            arr = arr.reshape(dst.shape)
        self._will_write(access)
        self._checks.wrote(access)
        try:
            np.copyto(dst, cast(arr, access.dtype), casting="unsafe")
        except ValueError:
            raise ShapeError(expected(f"values written to {access!r}", f"shape {dst.shape}",
                                      f"shape {arr.shape}")) from None

    def release(self, decl: TensorDecl) -> None:
        """The kernel can no longer name tile ``decl``: give its storage back for reuse."""
        self._forget(decl)
        self.memory.release(decl)

    def logical(self, decl: TensorDecl) -> np.ndarray:
        """A copy of tensor ``decl`` in its declared shape."""
        self.settle()
        return self.memory.logical(decl)

    def take(self, decl: TensorDecl) -> np.ndarray:
        """Tensor ``decl`` in its declared shape, handed over without a copy (the launch is over:
        nothing may access ``decl`` afterwards)."""
        self.settle()
        return self.memory.take(decl)

    def registers(self, engine: Engine) -> np.ndarray:
        """A copy of an engine's accumulator registers (zeros before first use)."""
        self.settle()
        regs = self._registers.get(engine)
        return np.zeros(self.config.num_partitions, np.float32) if regs is None else regs.copy()

    def first_error(self) -> BaseException | None:
        """An error of an instruction not raised yet (none: this executor raises at once)."""
        return None

    def close(self) -> None:
        """Nothing to stop: this executor runs in the caller's thread."""

    # --- the steps of one instruction (the fast executor reuses them) -----------------------------

    def _semantic(self, ins: Instruction):
        """The opcode's function in SEMANTICS, or a clear error."""
        fn = SEMANTICS.get(ins.opcode)
        if fn is None:
            raise UnsupportedError(expected("opcode", sorted(o.value for o in SEMANTICS),
                                            ins.opcode), loc=_loc(ins))
        return fn

    def _located(self, ins: Instruction) -> "_Located":
        """A context that turns errors raised while computing ``ins`` into simulator errors
        naming its kernel line."""
        return _Located(ins)

    def _start_accumulation(self, ins: Instruction) -> None:
        """``psum += nc_matmul(...)`` into PSUM elements nothing has written since they were
        allocated starts their accumulation group: the matmul writes them instead of adding
        (the compiler sets the matmul's accumulate flag per group; AWS's tutorials accumulate
        into fresh ``nl.ndarray`` PSUM tiles this way). Those elements are zeroed first, which
        gives the same values and reads no garbage (docs/frontend.md)."""
        if not (ins.opcode is Opcode.NC_MATMUL and ins.attrs.get("accumulate")
                and ins.out.space is MemSpace.PSUM):
            return
        missing = self._checks.unwritten(ins.out)
        if missing is None:
            return
        dst = self.memory.view(ins.out)
        if missing is True:
            dst[...] = 0
        else:
            np.copyto(dst, 0, where=missing)
        self._checks.wrote(ins.out)

    def _will_write(self, a: Access) -> None:
        """``a`` is about to be written."""
        self.memory.before_write(a.tensor)

    def _forget(self, decl: TensorDecl) -> None:
        """Drop what the executor keeps about a released tile."""
        self._tf32.discard(decl)
        self._checks.forget(decl)

    def _compute(self, ins: Instruction, fn) -> None:
        """Run ``fn`` on the sources' views and store every result."""
        view = self.memory.view
        srcs = {role: view(a) for role, a in ins.srcs.items()}
        outs = {role: Out(a.shape, a.dtype) for role, a in ins.dsts.items()}
        with np.errstate(all="ignore"):  # inf / NaN results are values, not warnings
            results = fn(srcs, ins.attrs, outs, ins.engine)
            if ins.opcode in ACTIVATIONS:
                self._accumulators(ins, results)
            elif ins.opcode is Opcode.SELECT_REDUCE:
                self._max_accumulators(ins, results)
            for role, value in results.items():
                self._store(ins, role, value)

    def _store(self, ins: Instruction, role: str, value: np.ndarray) -> None:
        """Write one result into its destination (cast, reshape, mask, accumulate)."""
        acc = ins.dsts[role]
        where = None
        if ins.mask is not None and acc.shape == ins.dsts["out"].shape:
            where = ins.mask.evaluate(acc.shape)
        rmw = read_modify_write(ins)
        if value.ndim == 0 and where is None and not rmw and self._fill(acc, value):
            return
        dst = (self.memory.view(acc) if rmw or where is not None
               else self.memory.view_for_write(acc))
        if value.shape != dst.shape and value.size == dst.size:
            value = value.reshape(dst.shape)  # e.g. flattened free axes, [1, F] vs [F]
        tf32 = acc.tensor in self._tf32
        if rmw:
            if where is None and dst.dtype == value.dtype == float32 and not tf32:
                np.add(dst, value, out=dst)  # accumulate in place, no temporaries
                return
            value = accumulate(dst, value)
        if value.dtype != dst.dtype or tf32:
            if where is None and not tf32 and value.dtype.kind == "f" and is_float(dst.dtype):
                # float to float: dtypes.cast is astype (round to nearest even), and copyto
                # runs the same conversion straight into the destination, without a temporary
                np.copyto(dst, value, casting="unsafe")
                return
            value = cast(value, acc.dtype)  # equal dtypes need no cast (the common case)
        if where is None:
            np.copyto(dst, value, casting="unsafe")
        else:
            np.copyto(dst, value, casting="unsafe", where=where)

    def _fill(self, acc: Access, value: np.ndarray) -> bool:
        """One value into a whole access (a memset): True when it was taken care of otherwise
        (the reference writes it like any result)."""
        return False

    def _accumulators(self, ins: Instruction, results: dict[str, np.ndarray]) -> None:
        """Apply activation's reduce_cmd to the engine's registers; reduce_res reads them."""
        if ins.opcode is Opcode.ACTIVATION_REDUCE:
            cmd = "reset_reduce"
        elif ins.attrs.get("reduce_cmd") is None:
            cmd = "reset_reduce" if "reduce_res" in ins.dsts else "idle"
        else:
            cmd = reduce_cmd_name(ins.attrs["reduce_cmd"])
        if cmd not in REDUCE_CMDS:
            raise UnsupportedError(expected("activation reduce_cmd on NeuronCore-v2",
                                            f"one of {sorted(REDUCE_CMDS)}", cmd))
        self._apply_registers(ins, results, cmd, 0.0, np.add)

    def _max_accumulators(self, ins: Instruction, results: dict[str, np.ndarray]) -> None:
        """select_reduce's reduce_cmd on the VectorE registers: reset to -inf, then max."""
        cmd = reduce_cmd_name(ins.attrs.get("reduce_cmd") or "idle")
        if cmd not in REDUCE_CMDS:
            raise UnsupportedError(expected("select_reduce reduce_cmd on NeuronCore-v2",
                                            f"one of {sorted(REDUCE_CMDS)}", cmd))
        self._apply_registers(ins, results, cmd, -np.inf, np.maximum)

    def _apply_registers(self, ins: Instruction, results: dict[str, np.ndarray], cmd: str,
                         reset: float, combine: np.ufunc) -> None:
        """Reset and/or fold the row results into the engine's registers; reduce_res reads
        them."""
        regs = self._registers.get(ins.engine)
        if regs is None:
            regs = self._registers[ins.engine] = np.zeros(self.config.num_partitions, np.float32)
        rows = results.pop("reduce_res", None)
        if cmd in _RESETS:
            regs[:] = reset
        if cmd in _REDUCES and rows is not None:
            lanes = regs[:rows.shape[0]]
            combine(lanes, rows[:, 0], out=lanes)
        if "reduce_res" in ins.dsts:
            lanes_out = ins.dsts["reduce_res"].partitions
            results["reduce_res"] = regs[:lanes_out, None].copy()


def read_modify_write(ins: Instruction) -> bool:
    """True when the instruction adds into its destination instead of overwriting it."""
    if ins.opcode is Opcode.NC_MATMUL:
        return bool(ins.attrs.get("accumulate"))
    if ins.opcode is Opcode.DMA_COPY:
        op = ins.attrs.get("dst_rmw_op")
        if op is None:
            return False
        if canon(op) != "add":
            raise UnsupportedError(expected("dma_copy dst_rmw_op", "None or 'add'", repr(op)))
        return True
    return False


class _Located:
    """Errors while computing one instruction become simulator errors naming its line."""

    def __init__(self, ins: Instruction) -> None:
        self.ins = ins

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, tb) -> bool:
        ins = self.ins
        if e is None:
            return False
        if isinstance(e, SimulatorError):
            if e.loc is not None:
                return False
            raise type(e)(f"{ins.opcode.value}: {e.message}", loc=_loc(ins)) from e
        if isinstance(e, ValueError):  # numpy could not broadcast / reshape the operands
            shapes = {r: a.shape for r, a in (*ins.srcs.items(), *ins.dsts.items())}
            raise ShapeError(f"{ins.opcode.value}: operand shapes do not fit together "
                             f"({shapes}): {e}", loc=_loc(ins)) from e
        if isinstance(e, KeyError):  # a role or attr the contract (OPCODE_DOC) requires is missing
            raise KernelError(expected(f"{ins.opcode.value} operand or attr {e}",
                                       "present (see ir.OPCODE_DOC)", "missing"),
                              loc=_loc(ins)) from e
        return False


def _loc(ins: Instruction) -> str | None:
    """The kernel line of an instruction, for error messages."""
    return str(ins.loc) if ins.loc is not None else None
