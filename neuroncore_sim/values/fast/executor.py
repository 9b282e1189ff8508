"""The fast executor: the reference executor's values, computed faster.

:class:`FastExecutor` gives every instruction the values :class:`~neuroncore_sim.values.execute.
Executor` (the spec run one instruction at a time) gives it, with the speed machinery of this
folder:

- ``nc_matmul`` into fp32 PSUM is held back in its accumulation chain and evaluated as one GEMM
  per chain (psum_chain.py), in a thread pool (gemm_jobs.py); the chain's sums are reordered, so
  results may differ from the reference within the bound of docs/model.md ("Reference and fast
  executors");
- instructions that need an unfinished GEMM's result, or write what it reads, are held back and
  run in program order once it is done, while the others go on;
- plain DMA loads into tiles are copied on first use, and memsets of whole tiles are written on
  first view (memory.py ``load_later`` / ``fill_later``); tile regions that still equal their
  HBM source let GEMMs read HBM directly (hbm_origin.py).

Everything else is the reference executor's code: its steps (``_compute``, ``_store``, the
accumulator registers) are inherited, not copied.
"""

from __future__ import annotations

import numpy as np

from ...config import NeuronCoreConfig
from ...dtypes import cast, float32
from ...program.ir import Access, Instruction, MemSpace, Opcode, TensorDecl
from ..execute import REGISTER_OPS, Executor
from .gemm_jobs import GemmRunner
from .hbm_origin import HbmOrigins
from .psum_chain import PsumChains


class FastExecutor(Executor):
    """An :class:`Executor` with deferred PSUM chains, GEMM threads and lazy loads and fills.

    Args:
        config: the simulated NeuronCore (its partition count sizes the accumulator registers).
        gemm_threads: background threads for the GEMMs of PSUM chains (gemm_jobs.py); 0 runs
            them in line. With threads, instructions that need an unfinished GEMM's result,
            or write what it reads, are held back and run in program order once it is done,
            while the instructions that do not go on (see :meth:`execute`).
    """

    def __init__(self, config: NeuronCoreConfig, gemm_threads: int = 0) -> None:
        super().__init__(config)
        #: tile regions that are untouched copies of HBM regions (the chains' GEMMs read HBM)
        self._origins = HbmOrigins(self.memory)
        self._gemms = GemmRunner(gemm_threads)
        #: nc_matmul held back and evaluated as one GEMM per PSUM accumulation chain.
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
        return ins.opcode in REGISTER_OPS and ins.engine in held_w

    def _hold(self, item: Instruction | TensorDecl) -> None:
        self._held.append(item)
        if isinstance(item, TensorDecl):  # a release: nothing later may touch the tile
            self._held_writes.add(item)
            return
        self._held_reads.update(a.tensor for a in item.srcs.values())
        self._held_writes.update(a.tensor for a in item.dsts.values())
        if item.opcode in REGISTER_OPS:  # the engine's accumulator registers keep order too
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
        fn = self._semantic(ins)
        with self._located(ins):
            matmul = ins.opcode is Opcode.NC_MATMUL
            if self._chains and not matmul:  # pending matmuls it reads or overwrites land first
                self._chains.before(list(ins.srcs.values()), list(ins.dsts.values()))
                if self._gemms and self._blocked(ins):  # ... in a GEMM still in flight
                    self._hold(ins)
                    return
            self._start_accumulation(ins)
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
            self._compute(ins, fn)

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
        self._forget(decl)
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

    def _will_write(self, a: Access) -> None:
        """``a`` is about to be written: tile copies of it stop being copies (their pending
        loads are copied first, their origins dropped)."""
        self._origins.wrote(a)
        self.memory.before_write(a.tensor)

    def _fill(self, acc: Access, value: np.ndarray) -> bool:
        """A memset of a whole tile is recorded and written when the tile is next viewed."""
        return (acc.view_dtype is None  # (a dtype view writes other bytes than it names)
                and self.memory.fill_later(acc, cast(value, acc.tensor.dtype)))

    def _defer_matmul(self, ins: Instruction) -> bool:
        """Hold an nc_matmul back in its PSUM accumulation chain (psum_chain.py). Returns False
        when the general path must run it now (masked or non-fp32 output, or operand shapes the
        general path should report)."""
        acc = ins.dsts["out"]
        if (ins.mask is not None or acc.dtype != float32 or acc.tensor in self._tf32
                or acc.resized):  # (a view of another element size: chains count elements)
            return False
        s, m = ins.srcs["stationary"], ins.srcs["moving"]
        k = s.partitions
        if k <= 0 or m.partitions != k or acc.size != (s.size // k) * (m.size // k):
            return False
        self._chains.add(acc, bool(ins.attrs.get("accumulate")), s, m)
        return True


def _plain_load(ins: Instruction) -> bool:
    """A dma_copy from HBM into an SBUF tile that copies its source unchanged: no mask, no
    indirection, no read-modify-write, no cast, same shape."""
    src, dst = ins.srcs.get("src"), ins.dsts["out"]
    return (ins.mask is None and src is not None and src.tensor.space is MemSpace.HBM
            and dst.tensor.space is MemSpace.SBUF and src.dtype == dst.dtype
            and src.view_dtype is None and dst.view_dtype is None
            and src.shape == dst.shape and ins.attrs.get("indirect") is None
            and ins.attrs.get("dst_rmw_op") is None)
