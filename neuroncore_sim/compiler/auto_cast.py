"""Auto-cast: fp32 matmul inputs the compiler runs as bf16.

What neuronx-cc does: ``--auto-cast=matmult`` (the default up to SDK 2.26) casts the fp32
inputs of matrix multiplications to bf16, ``--auto-cast=all`` every fp32 operation, ``none``
nothing; SDK 2.27 made ``none`` the default (neuronx-cc release notes, SDK 2.27: "The
--auto-cast flag now defaults to none (previously matmul)"). NKIBench was measured with
``--auto-cast=none``. On TensorE an fp32 matmul costs 4x a bf16 one ([ISA-nc_matmul]), so the
cast is what the timing sees. Evidence that NKI kernels are cast too: Autocomp's attention
trace (SDK 2.26 defaults) runs fp32 QK matmuls faster than their fp32 cost allows.

This pass marks each ``nc_matmul`` with an fp32 input with the attr ``auto_cast`` ("bfloat16")
when the option casts matmuls; the cost model then uses the bf16 cost. Values are not changed:
the simulator computes what the kernel wrote (as ``nki.simulate_kernel`` does), so a kernel's
numbers under ``matmult`` are those of ``none`` (docs/model.md says so).
Switch: ``config.compiler.auto_cast``.
"""

from __future__ import annotations

from ..config import CompileOptions
from ..dtypes import dtype_name
from ..program.ir import Instruction, Opcode

#: auto_cast values that cast matmul inputs.
CASTS_MATMULS = frozenset({"matmult", "all"})


def mark_auto_cast(instrs: list[Instruction], options: CompileOptions) -> list[Instruction]:
    """``instrs`` with the fp32 matmuls the option casts carrying ``attrs["auto_cast"]``."""
    if options.auto_cast not in CASTS_MATMULS:
        return instrs
    out = []
    for ins in instrs:
        if ins.opcode is Opcode.NC_MATMUL and "float32" in (
                dtype_name(ins.srcs["stationary"].dtype), dtype_name(ins.srcs["moving"].dtype)):
            ins = Instruction(ins.id, ins.opcode, ins.engine, ins.dsts, ins.srcs,
                              {**ins.attrs, "auto_cast": "bfloat16"}, ins.loc, ins.mask,
                              ins.instance, ins.loops)
        out.append(ins)
    return out
