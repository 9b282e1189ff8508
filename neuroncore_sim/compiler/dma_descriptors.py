"""DMA descriptor generation: which DMAs get their descriptors at run time (DGE).

What neuronx-cc does: every DMA needs descriptors (source and destination addresses, shape,
strides). They are either precomputed on the host and stored in HBM (``dge_mode.none``, no
run-time cost) or generated while the kernel runs. On NeuronCore-v2 the run-time generator is
software DGE: "The GpSimd Engine generates DMA descriptors during NEFF execution ... Consumes
GpSimd Engine cycles" (Neuron docs, nki-dge deep dive; hardware DGE exists only from
NeuronCore-v3). neuronx-cc 2.15 (SDK 2.20) turned DGE on by default for the DMAs of kernel
inputs and outputs (AWS's tutorial logs print ``DGE ON Levels: {'scalar_dynamic_offset', 'io'}``)
and offered ``--disable-dge``; NKIBench was measured with ``--disable-dge``. Indirect (gathered or
scattered) DMAs are generated at run time whatever the option: software DGE is the only mode
that supports them (same page).

Which DMAs pay for it (assumption, from SDK 2.20's measurements): the loads from kernel inputs
and outputs. AWS's matmul ladder reads at the generator's ~102 GB/s, while its LayerNorm
tutorial moves 128 MiB in and 128 MiB out in 1.97 ms, which a generator serving both
directions at that rate could not (2.4 ms): stores run at the DMA engines' write rate.

This pass marks the DMA instructions whose descriptors are generated at run time with the attr
``dge`` (True); the timing model (``timing/dma.py``) makes their transfers wait for the
generator. Switch: ``config.compiler.dge`` (neuronx-cc's ``--disable-dge`` is ``dge=false``).
"""

from __future__ import annotations

from ..config import CompileOptions
from ..program.ir import Instruction, MemSpace
from ..program.opcodes import DMA_OPCODES

#: Tensor kinds that are the kernel's inputs and outputs (the "io" level of DGE).
IO_KINDS = frozenset({"input", "output"})


def is_io_dma(ins: Instruction) -> bool:
    """Whether a DMA instruction loads a kernel input or output from HBM (stores are not
    counted: on SDK 2.20's measurements only loads run at the generator's rate, see below)."""
    src = ins.srcs.get("src")
    return src is not None and src.tensor.space is MemSpace.HBM and src.tensor.kind in IO_KINDS


def generated_at_run_time(ins: Instruction, options: CompileOptions) -> bool:
    """Whether the descriptors of DMA instruction ``ins`` are generated while the kernel runs."""
    return ins.attrs.get("indirect") is not None or (options.dge and is_io_dma(ins))


def mark_dge(instrs: list[Instruction], options: CompileOptions) -> list[Instruction]:
    """``instrs`` with each DMA whose descriptors are generated at run time carrying
    ``attrs["dge"] = True`` (a new Instruction; the Program's own is unchanged)."""
    out = []
    for ins in instrs:
        if ins.opcode in DMA_OPCODES and generated_at_run_time(ins, options):
            ins = Instruction(ins.id, ins.opcode, ins.engine, ins.dsts, ins.srcs,
                              {**ins.attrs, "dge": True}, ins.loc, ins.mask, ins.instance,
                              ins.loops)
        out.append(ins)
    return out
