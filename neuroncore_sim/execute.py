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
from .config import NeuronCoreConfig
from .dtypes import cast, dtype_name
from .errors import KernelError, ShapeError, SimulatorError, UnsupportedError, expected
from .ir import Access, Engine, Instruction, Opcode, TensorDecl
from .memory import Memory
from .semantics import SEMANTICS, Out, accumulate, canon, matmul

#: Values of ``reduce_cmd`` (nki.isa.reduce_cmd) the activation accumulators support.
REDUCE_CMDS = frozenset({"idle", "reset", "reduce", "reset_reduce"})
_RESETS = frozenset({"reset", "reset_reduce"})
_REDUCES = frozenset({"reduce", "reset_reduce"})
_ACTIVATIONS = frozenset({Opcode.ACTIVATION, Opcode.ACTIVATION_REDUCE})
#: Bytes of float32 operand conversions kept for reuse (a 2048^3 bf16 GEMM re-reads ~20 MiB).
F32_CACHE_BYTES = 32 * 1024 * 1024
_F32 = np.dtype(np.float32)


def reduce_cmd_name(value: object) -> str:
    """Normalise a reduce_cmd attr (a ``nki.isa.reduce_cmd`` member or its name) to its name."""
    return str(getattr(value, "name", value))


class Executor:
    """Holds the memory of one kernel launch and executes instructions on it.

    Args:
        config: the simulated NeuronCore (its partition count sizes the accumulator registers).
    """

    def __init__(self, config: NeuronCoreConfig) -> None:
        self.config = config
        self.memory = Memory()
        #: Unwritten-memory and activation-range checks; their warnings (checks.py).
        self.checks = ValueChecks()
        #: Activation accumulator registers, one fp32 register per lane, per engine.
        self._registers: dict[Engine, np.ndarray] = {}
        #: Tensors of dtype tfloat32 (their float32 storage hides the rounding a write needs).
        self._tf32: set[TensorDecl] = set()
        #: Writes per tensor: a float32 conversion of a region is reusable while this is unchanged.
        self._versions: dict[TensorDecl, int] = {}
        #: (tensor, offset, pattern) -> (version, float32 copy of the region): stationary and
        #: moving tiles are re-read by many matmuls, and converting them again costs ~30% of a
        #: GEMM's functional run.
        self._f32_cache: dict[tuple, tuple[int, np.ndarray]] = {}
        self._f32_cache_bytes = 0
        #: One evicted conversion buffer per shape, recycled by the next conversion.
        self._spare: dict[tuple[int, ...], np.ndarray] = {}
        #: Reused matmul result buffers by shape (fresh 256 KiB temporaries page-fault each time).
        self._scratch: dict[tuple[int, ...], np.ndarray] = {}

    # --- the protocol the front end uses ---------------------------------------------------------

    def declare(self, decl: TensorDecl, values: np.ndarray | None) -> None:
        """Allocate ``decl``, initialised from ``values`` (declared shape) or NaN / 0."""
        self.memory.declare(decl, values)
        self.checks.declare(decl, values is not None)
        self._touch(decl)
        if dtype_name(decl.dtype) == "tfloat32":  # stored as float32 but rounded on every write
            self._tf32.add(decl)

    def execute(self, ins: Instruction) -> None:
        """Compute ``ins`` and write its destinations.

        Raises:
            SimulatorError: a subclass naming the instruction's kernel line when an operand is
                out of bounds, shapes do not fit, or an operator or dtype is not allowed.
        """
        fn = SEMANTICS.get(ins.opcode)
        if fn is None:
            raise UnsupportedError(expected("opcode", sorted(o.value for o in SEMANTICS),
                                            ins.opcode), loc=_loc(ins))
        try:
            self.checks.before(ins, self.memory.view)
            if ins.opcode is Opcode.NC_MATMUL and self._matmul(ins):
                return
            view = self.memory.view
            srcs = {role: view(a) for role, a in ins.srcs.items()}
            outs = {role: Out(a.shape, a.dtype) for role, a in ins.dsts.items()}
            with np.errstate(all="ignore"):  # inf / NaN results are values, not warnings
                results = fn(srcs, ins.attrs, outs, ins.engine)
                if ins.opcode in _ACTIVATIONS:
                    self._accumulators(ins, results)
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
        return self.memory.view(access).copy()

    def write(self, access: Access, values: np.ndarray) -> None:
        """Overwrite the region ``access`` selects with ``values`` (cast to the tensor's dtype;
        same shape, same number of elements, or broadcastable)."""
        dst = self.memory.view(access)
        arr = np.asarray(values)
        if arr.shape != dst.shape and arr.size == dst.size:
            arr = arr.reshape(dst.shape)
        self._touch(access.tensor)
        self.checks.wrote(access)
        try:
            np.copyto(dst, cast(arr, access.tensor.dtype), casting="unsafe")
        except ValueError:
            raise ShapeError(expected(f"values written to {access!r}", f"shape {dst.shape}",
                                      f"shape {arr.shape}")) from None

    def logical(self, decl: TensorDecl) -> np.ndarray:
        """A copy of tensor ``decl`` in its declared shape."""
        return self.memory.logical(decl)

    # --- helpers -----------------------------------------------------------------------------

    def _store(self, ins: Instruction, role: str, value: np.ndarray) -> None:
        """Write one result into its destination (cast, reshape, mask, accumulate)."""
        acc = ins.dsts[role]
        dst = self.memory.view(acc)
        self._touch(acc.tensor)
        if value.shape != dst.shape and value.size == dst.size:
            value = value.reshape(dst.shape)  # e.g. flattened free axes, [1, F] vs [F]
        where = None
        if ins.mask is not None and dst.shape == ins.dsts["out"].shape:
            where = ins.mask.evaluate(dst.shape)
        tf32 = acc.tensor in self._tf32
        if _read_modify_write(ins):
            if where is None and dst.dtype == value.dtype == _F32 and not tf32:
                np.add(dst, value, out=dst)  # accumulate in place, no temporaries
                return
            value = accumulate(dst, value)
        if value.dtype != dst.dtype or tf32:
            value = cast(value, acc.tensor.dtype)  # equal dtypes need no cast (the common case)
        if where is None:
            np.copyto(dst, value, casting="unsafe")
        else:
            np.copyto(dst, value, casting="unsafe", where=where)

    def _touch(self, decl: TensorDecl) -> None:
        """Record a write to ``decl`` (invalidates its cached float32 conversions)."""
        self._versions[decl] = self._versions.get(decl, 0) + 1

    def _as_f32(self, access: Access) -> np.ndarray:
        """The region ``access`` selects as float32, reusing an unchanged earlier conversion."""
        view = self.memory.view(access)
        if view.dtype == _F32:
            return view
        key = (access.tensor, access.offset, access.pattern)
        version = self._versions.get(access.tensor, 0)
        hit = self._f32_cache.pop(key, None)
        if hit is not None:
            self._f32_cache_bytes -= hit[1].nbytes
            if hit[0] != version:
                hit = None
        if hit is None:
            # Convert into an evicted buffer of the same shape when there is one: fresh
            # 256 KiB arrays cost more in page faults than the conversion itself.
            spare = self._spare.pop(view.shape, None)
            arr = view.astype(_F32) if spare is None else spare
            if spare is not None:
                np.copyto(arr, view, casting="unsafe")
        else:
            arr = hit[1]
        self._f32_cache[key] = (version, arr)  # (re)inserted last: evicted last
        self._f32_cache_bytes += arr.nbytes
        while self._f32_cache_bytes > F32_CACHE_BYTES and len(self._f32_cache) > 1:
            _, (_, old) = _pop_oldest(self._f32_cache)
            self._f32_cache_bytes -= old.nbytes
            self._spare[old.shape] = old
        return arr

    def _matmul(self, ins: Instruction) -> bool:
        """nc_matmul without temporaries: cached float32 operands, a reused result buffer, and
        PSUM accumulation in place. Returns False when the general path must run instead
        (masked or non-fp32 output, or shapes the general path should report)."""
        acc = ins.dsts["out"]
        if ins.mask is not None or acc.dtype != _F32 or acc.tensor in self._tf32:
            return False
        s, m = self._as_f32(ins.srcs["stationary"]), self._as_f32(ins.srcs["moving"])
        shape = (s.size // max(s.shape[0], 1), m.size // max(m.shape[0], 1))
        dst = self.memory.view(acc)
        if dst.size != shape[0] * shape[1]:
            return False  # the general path reports the shape mismatch
        buf = self._scratch.get(shape)
        if buf is None:
            buf = self._scratch[shape] = np.empty(shape, _F32)
        result = matmul(s, m, out=buf).reshape(dst.shape)
        if ins.attrs.get("accumulate"):
            np.add(dst, result, out=dst)
        else:
            np.copyto(dst, result)
        self._touch(acc.tensor)
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
        regs = self._registers.get(ins.engine)
        if regs is None:
            regs = self._registers[ins.engine] = np.zeros(self.config.num_partitions, np.float32)
        row_sums = results.pop("reduce_res", None)
        if cmd in _RESETS:
            regs[:] = 0.0
        if cmd in _REDUCES and row_sums is not None:
            regs[:row_sums.shape[0]] += row_sums[:, 0]
        if "reduce_res" in ins.dsts:
            lanes = ins.dsts["reduce_res"].partitions
            results["reduce_res"] = regs[:lanes, None].copy()

    def registers(self, engine: Engine) -> np.ndarray:
        """A copy of an engine's accumulator registers (zeros before first use)."""
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


def _pop_oldest(cache: dict) -> tuple:
    """Remove and return the least recently inserted (key, value) of a dict."""
    key = next(iter(cache))
    return key, cache.pop(key)


def _loc(ins: Instruction) -> str | None:
    """The kernel line of an instruction, for error messages."""
    return str(ins.loc) if ins.loc is not None else None
