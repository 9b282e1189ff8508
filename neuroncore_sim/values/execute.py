"""Functional executor: gives every recorded instruction its numpy values, one at a time.

The front end calls :meth:`Executor.execute` right after recording each instruction, so values
exist while the kernel runs (``print``, ``pdb`` and ``nl.device_print`` work inside kernels).
For each instruction the executor gathers strided views of the sources (``memory.py``), calls the
opcode's meaning (``semantics.py``), casts each result to its destination's dtype
(``dtypes.cast``) and writes it in place, honouring the instruction mask, PSUM accumulation,
DMA read-modify-write and the activation accumulator registers.

The executor knows nothing about time; the timing model never sees these values.
"""

from __future__ import annotations

import numpy as np

from .checks import ValueChecks
from ..config import NeuronCoreConfig
from ..dtypes import cast, dtype_name, is_float
from ..errors import KernelError, ShapeError, SimulatorError, UnsupportedError, expected
from .fast.gemm_jobs import GemmRunner
from .fast.hbm_origin import HbmOrigins
from ..program.ir import Access, Engine, Instruction, MemSpace, Opcode, TensorDecl
from .memory import Memory
from .fast.psum_chain import PsumChains
from .semantics import SEMANTICS, Out, accumulate, canon

#: Values of ``reduce_cmd`` (nki.isa.reduce_cmd) the activation accumulators support.
REDUCE_CMDS = frozenset({"idle", "reset", "reduce", "reset_reduce"})
_RESETS = frozenset({"reset", "reset_reduce"})
_REDUCES = frozenset({"reduce", "reset_reduce"})
_ACTIVATIONS = frozenset({Opcode.ACTIVATION, Opcode.ACTIVATION_REDUCE})
#: Opcodes that use their engine's accumulator registers (kept in order when held back).
_REGISTER_OPS = _ACTIVATIONS | {Opcode.SELECT_REDUCE}
_F32 = np.dtype(np.float32)


def reduce_cmd_name(value: object) -> str:
    """Normalise a reduce_cmd attr (a ``nki.isa.reduce_cmd`` member or its name) to its name."""
    return str(getattr(value, "name", value))


class Executor:
    """Holds the memory of one kernel launch and executes instructions on it.

    Args:
        config: the simulated NeuronCore (its partition count sizes the accumulator registers).
        gemm_threads: background threads for the GEMMs of PSUM chains (gemm_jobs.py); 0 runs
            them in line. With threads, instructions that need an unfinished GEMM's result,
            or write what it reads, are held back and run in program order once it is done,
            while the instructions that do not go on (see :meth:`execute`).
    """

    def __init__(self, config: NeuronCoreConfig, gemm_threads: int = 0) -> None:
        self.config = config
        self.memory = Memory()
        self._checks = ValueChecks()
        #: Activation accumulator registers, one fp32 register per lane, per engine.
        self._registers: dict[Engine, np.ndarray] = {}
        #: Tensors of dtype tfloat32 (their float32 storage hides the rounding a write needs).
        self._tf32: set[TensorDecl] = set()
        #: nc_matmul held back and evaluated as one GEMM per PSUM accumulation chain.
        #: tile regions that are untouched copies of HBM regions (the chains' GEMMs read HBM)
        self._origins = HbmOrigins(self.memory)
        self._gemms = GemmRunner(gemm_threads)
        self._chains = PsumChains(self.memory, self._origins, self._gemms)
        #: instructions (and tile releases) held back, in program order (see :meth:`execute`)
        self._held: list[Instruction | TensorDecl] = []
        #: what the held items read and write (tensors; engines for the accumulator registers)
        self._held_reads: set[object] = set()
        self._held_writes: set[object] = set()
        self._seen_retired = 0  # GemmRunner.retired when the held items were last looked at
        self._releasing = False
        #: dead tiles kept because a pending chain still reads them (see :meth:`release`)
        self._zombies: set[TensorDecl] = set()
        self._buried_at = -1  # the chains' generation when the zombies were last checked

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

        With GEMM threads, ``ins`` is held back instead when it reads what an unfinished GEMM
        writes (its PSUM results), writes what one reads or writes, or touches what an earlier
        held instruction touches; held instructions run in program order as soon as the GEMMs
        they wait for are retired. Instructions that do not touch the same memory commute, so
        the values are those of running everything in program order. Errors too: when ``ins``
        fails, the held instructions (all earlier in program order) run first and their error,
        if any, is the one raised.

        Raises:
            SimulatorError: a subclass naming the instruction's kernel line when an operand is
                out of bounds, shapes do not fit, or an operator or dtype is not allowed.
        """
        if (self._held or self._gemms) and self._blocked(ins):
            self._hold(ins)
        else:
            try:
                self._execute(ins)
            except Exception:
                if self._held:
                    self._first_error_of_held()
                raise
        if self._held and self._gemms.retired != self._seen_retired:
            self._release_held()

    def settle(self) -> None:
        """Compute everything recorded so far: evaluate the pending chains, finish every GEMM
        in flight and run every held instruction (a held matmul may start a chain again)."""
        while self._held or self._gemms or self._chains:
            self._chains.flush()  # (pending chains never touch what held instructions touch)
            self._gemms.retire(0)
            self._seen_retired = -1  # look at every held item again
            self._release_held()

    def _first_error_of_held(self) -> None:
        """An instruction failed: run the held (earlier) ones first; raise their error if any."""
        try:
            self.settle()
        except Exception as earlier:
            raise earlier.with_traceback(None) from None

    def _blocked(self, ins: Instruction) -> bool:
        """True when ``ins`` must wait: it reads what an unfinished GEMM or a held instruction
        writes, or writes what one of them reads or writes."""
        busy_w, busy_r = self._gemms.writes, self._gemms.reads
        held_w, held_r = self._held_writes, self._held_reads
        for a in ins.srcs.values():
            t = a.tensor
            if t in busy_w or t in held_w:
                return True
        for a in ins.dsts.values():
            t = a.tensor
            if t in busy_w or t in busy_r or t in held_w or t in held_r:
                return True
        return ins.opcode in _REGISTER_OPS and ins.engine in held_w

    def _hold(self, item: Instruction | TensorDecl) -> None:
        self._held.append(item)
        if isinstance(item, TensorDecl):  # a release: nothing later may touch the tile
            self._held_writes.add(item)
            return
        self._held_reads.update(a.tensor for a in item.srcs.values())
        self._held_writes.update(a.tensor for a in item.dsts.values())
        if item.opcode in _REGISTER_OPS:  # the engine's accumulator registers keep order too
            self._held_writes.add(item.engine)

    def _release_held(self) -> None:
        """Run the held items that no longer wait, in program order (one pass per retired
        GEMM; a held item blocked only by earlier held items runs in the pass that runs
        them)."""
        if self._releasing:  # (a held item's own chain evaluation retired a GEMM)
            return
        self._releasing = True
        try:
            while self._held and self._seen_retired != self._gemms.retired:
                self._seen_retired = self._gemms.retired
                held, self._held = self._held, []
                self._held_reads, self._held_writes = set(), set()
                for item in held:
                    if isinstance(item, TensorDecl):
                        self.release(item)
                    elif self._blocked(item):
                        self._hold(item)
                    else:
                        self._execute(item)
        finally:
            self._releasing = False

    def _execute(self, ins: Instruction) -> None:
        """Compute ``ins`` now (or hold it, when the chains it needs were just submitted)."""
        fn = SEMANTICS.get(ins.opcode)
        if fn is None:
            raise UnsupportedError(expected("opcode", sorted(o.value for o in SEMANTICS),
                                            ins.opcode), loc=_loc(ins))
        try:
            matmul = ins.opcode is Opcode.NC_MATMUL
            if self._chains and not matmul:  # pending matmuls it reads or overwrites land first
                self._chains.before(list(ins.srcs.values()), list(ins.dsts.values()))
                if self._gemms and self._blocked(ins):  # ... in a GEMM still in flight
                    self._hold(ins)
                    return
            self._checks.before(ins, self.memory.view)  # after: it may look at the values
            if matmul:
                if self._defer_matmul(ins):
                    return
                if self._chains:  # a matmul that cannot join a chain runs after the pending ones
                    self._chains.before(list(ins.srcs.values()), list(ins.dsts.values()))
                    if self._gemms:
                        self._gemms.retire(0)  # (rare: masked or non-fp32 PSUM matmuls)
            if self._zombies and self._buried_at != self._chains.generation:
                self._bury()
            for a in ins.dsts.values():
                self._will_write(a)
            if ins.opcode is Opcode.DMA_COPY and _plain_load(ins):
                self.memory.load_later(ins.dsts["out"], ins.srcs["src"])
                self._origins.loaded(ins.dsts["out"], ins.srcs["src"])
                return
            view = self.memory.view
            srcs = {role: view(a) for role, a in ins.srcs.items()}
            outs = {role: Out(a.shape, a.dtype) for role, a in ins.dsts.items()}
            with np.errstate(all="ignore"):  # inf / NaN results are values, not warnings
                results = fn(srcs, ins.attrs, outs, ins.engine)
                if ins.opcode in _ACTIVATIONS:
                    self._accumulators(ins, results)
                elif ins.opcode is Opcode.SELECT_REDUCE:
                    self._max_accumulators(ins, results)
                for role, value in results.items():
                    self._store(ins, role, value)
        except SimulatorError as e:
            if e.loc is not None:
                raise
            raise type(e)(f"{ins.opcode.value}: {e.message}", loc=_loc(ins)) from e
        except ValueError as e:  # numpy could not broadcast / reshape the operands
            shapes = {r: a.shape for r, a in (*ins.srcs.items(), *ins.dsts.items())}
            raise ShapeError(f"{ins.opcode.value}: operand shapes do not fit together "
                             f"({shapes}): {e}", loc=_loc(ins)) from e
        except KeyError as e:  # a role or attr the contract (ir.OPCODE_DOC) requires is missing
            raise KernelError(expected(f"{ins.opcode.value} operand or attr {e}",
                                       "present (see ir.OPCODE_DOC)", "missing"),
                              loc=_loc(ins)) from e

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

    def _will_write(self, a: Access) -> None:
        """``a`` is about to be written: tile copies of it stop being copies (their pending
        loads are copied first, their origins dropped)."""
        self._origins.wrote(a)
        self.memory.before_write(a.tensor)

    def release(self, decl: TensorDecl) -> None:
        """The kernel can no longer name tile ``decl``: give its storage back for reuse, once no
        pending matmul reads it (pending matmuls into it are dropped: nothing can read them).
        Held back while a held instruction or an unfinished GEMM uses it."""
        if (self._held or self._gemms) and (decl in self._held_reads or decl in self._held_writes
                                            or self._gemms.uses(decl)):
            self._hold(decl)
            return
        self._chains.drop(decl)
        self._origins.forget(decl)
        self._tf32.discard(decl)
        self._checks.forget(decl)
        if self._chains.reads(decl):
            self._zombies.add(decl)
        else:
            self.memory.release(decl)

    def _bury(self) -> None:
        """Release the dead tiles whose last pending reader has been evaluated."""
        self._buried_at = self._chains.generation
        for decl in [d for d in self._zombies
                     if not self._chains.reads(d) and not self._gemms.uses(d)]:
            self._zombies.discard(decl)
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

    # --- helpers -----------------------------------------------------------------------------

    def _store(self, ins: Instruction, role: str, value: np.ndarray) -> None:
        """Write one result into its destination (cast, reshape, mask, accumulate)."""
        acc = ins.dsts[role]
        where = None
        if ins.mask is not None and acc.shape == ins.dsts["out"].shape:
            where = ins.mask.evaluate(acc.shape)
        rmw = _read_modify_write(ins)
        if (value.ndim == 0 and where is None and not rmw and acc.view_dtype is None
                and self.memory.fill_later(acc, cast(value, acc.tensor.dtype))):
            return  # one value into a whole tile (a memset): written when first viewed
        dst = (self.memory.view(acc) if rmw or where is not None
               else self.memory.view_for_write(acc))
        if value.shape != dst.shape and value.size == dst.size:
            value = value.reshape(dst.shape)  # e.g. flattened free axes, [1, F] vs [F]
        tf32 = acc.tensor in self._tf32
        if rmw:
            if where is None and dst.dtype == value.dtype == _F32 and not tf32:
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

    def _defer_matmul(self, ins: Instruction) -> bool:
        """Hold an nc_matmul back in its PSUM accumulation chain (psum_chain.py). Returns False
        when the general path must run it now (masked or non-fp32 output, or operand shapes the
        general path should report)."""
        acc = ins.dsts["out"]
        if ins.mask is not None or acc.dtype != _F32 or acc.tensor in self._tf32:
            return False
        s, m = ins.srcs["stationary"], ins.srcs["moving"]
        k = s.partitions
        if k <= 0 or m.partitions != k or acc.size != (s.size // k) * (m.size // k):
            return False
        self._chains.add(acc, bool(ins.attrs.get("accumulate")), s, m)
        return True

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

    def registers(self, engine: Engine) -> np.ndarray:
        """A copy of an engine's accumulator registers (zeros before first use)."""
        self.settle()
        regs = self._registers.get(engine)
        return np.zeros(self.config.num_partitions, np.float32) if regs is None else regs.copy()


def _read_modify_write(ins: Instruction) -> bool:
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


def _plain_load(ins: Instruction) -> bool:
    """A dma_copy from HBM into an SBUF tile that copies its source unchanged: no mask, no
    indirection, no read-modify-write, no cast, same shape."""
    src, dst = ins.srcs.get("src"), ins.dsts["out"]
    return (ins.mask is None and src is not None and src.tensor.space is MemSpace.HBM
            and dst.tensor.space is MemSpace.SBUF and src.dtype == dst.dtype
            and src.view_dtype is None and dst.view_dtype is None
            and src.shape == dst.shape and ins.attrs.get("indirect") is None
            and ins.attrs.get("dst_rmw_op") is None)


def _loc(ins: Instruction) -> str | None:
    """The kernel line of an instruction, for error messages."""
    return str(ins.loc) if ins.loc is not None else None
