"""DMA triggers in program order: the DMAs of one iteration are issued in the order the kernel
wrote them.

What the hardware does: "each DMA transfer starts with a DMA trigger from a NeuronCore and ends
with a semaphore update from the DMA engine" (NKI docs, "Introduction to DMA with NKI"); the
triggers are instructions of an engine's in-order stream (the profile names the DMA queues by
the engine that triggers them, ``qSyncIO0``, ``qScalarSpillReload0``: shared/arch.md 1.10). A
trigger whose data is not ready (a store waiting for the computation it stores) holds up the
triggers behind it.

What the compiler does with them: it interleaves independent ``affine_range`` iterations
(:mod:`.reorder`), so the next iteration's loads need not queue behind this one's store. Within
one iteration it keeps the kernel's order on every engine (:mod:`.reorder`): that includes a
Python or ``sequential_range`` loop inside it (the tracer unrolls a Python loop into straight-line
code, one iteration to the compiler) and the iterations of a loop that carries an accumulation
(:func:`.reorder.chain_key`). Assumption (no document states it): it keeps the order of those
iterations' DMA triggers too.

Model: each DMA the kernel wrote is issued no earlier than the DMA before it in the compiled
stream with the same :func:`~.reorder.chain_key` was issued. Within one such iteration the stream
is the kernel's order, except where the scheduler placed a load earlier (then its trigger is
earlier too); every dependency goes forward in the stream, so the order adds no cycle. The
issue waits, not the transfer: the transfers of consecutive DMAs overlap as before. Not chained:
loop-invariant repeats (they run in no time, :mod:`.hoist`) and the spill saves and reloads of
the memory plan (the compiler places those on queues of their own: ``qScalarSpillReload0``).

Evidence: NKIBench's rope is a Python loop of 512 iterations (three loads, six VectorE
products, a store): the profile's 4.33 ms is 8.5 us per iteration, VectorE's 6.1 us plus the
loads, as when each iteration's loads wait behind the previous store; loads issued as their
buffers allow overlap the products (2.86 ms); in order 4.81 ms. The Mamba kernels (AWS's
sweeps, Autocomp's v6; all were too fast) move up to 5 % slower.

Switch: ``config.compiler.order_dma_triggers``.
"""

from __future__ import annotations

from collections.abc import Container

from ..program.ir import DMA_OPCODES, Instruction
from .reorder import carried_loops, chain_key


def trigger_order(instrs: list[Instruction], skip: Container[int]) -> dict[int, int]:
    """DMA id -> the DMA whose trigger comes before it in its iteration (it is issued no
    earlier than that one). ``instrs``: one instance's compiled stream; ``skip``: ids that are
    no trigger of the kernel's (loop-invariant repeats)."""
    carried = carried_loops(instrs)
    last: dict[tuple, int] = {}
    after: dict[int, int] = {}
    for ins in instrs:
        if ins.opcode not in DMA_OPCODES or ins.id in skip or ins.attrs.get("spill"):
            continue
        key = chain_key(ins, carried) if carried else ins.loops
        prev = last.get(key)
        if prev is not None:
            after[ins.id] = prev
        last[key] = ins.id
    return after
