"""Engine choice: VectorE or ScalarE for work whose engine the kernel did not name.

What neuronx-cc does: the NKI reference leaves the engine of several instructions to the
compiler: ``tensor_copy`` "based on engine workload", ``tensor_scalar``, ``tensor_tensor`` and
``memset`` "based on the input tile shape" (SDK 2.20-2.26 ``nki.isa`` pages), and every ``nl``
call. SDK 2.20's ``nisa.reciprocal`` cost text is "N ScalarE cycles if N >= 64, else 8N VectorE
cycles". NKIBench's profiles (SDK 2.24/2.25) show ScalarE active 14-62 % on kernels whose NKI code
puts its element-wise work on ``nl`` calls and engine-less ``nisa`` calls, e.g. AdamW: ScalarE
62 %, VectorE 90 % of 2.0 ms, while the kernel as written names ScalarE for one instruction in
fifteen.

Model (our reading of "based on engine workload"): instructions are taken in program order
while the compiler's estimate of each engine's work so far is kept; an instruction whose engine
was picked (attr ``engine_picked``, set by the front end) and that ScalarE can run goes to
whichever of VectorE and ScalarE would finish it sooner by that estimate (ties: VectorE, the
front end's default). ScalarE can run, on NeuronCore-v2 (arch.md 3.4, [PERF] opt. 5a):
``tensor_scalar`` with add / subtract / multiply operators on float data (an ACTIVATE identity
with scale and bias), float ``tensor_copy``, and ``reciprocal`` of N >= 64. ``tensor_tensor``
stays on VectorE (ScalarE takes one input tensor); GpSimd is left out (NKIBench: GpSimd active
under 3 % on every kernel). The estimate is the docs' per-instruction cycles: N per input
tensor (``max(MIN_II, .)``), 8N for a VectorE reciprocal, at each engine's clock
(:func:`estimate_ns`; the timing model's own costs are finer).

A float copy out of PSUM (``nl.copy`` / ``tensor_copy`` of a matmul result) goes to ScalarE
whatever the balance: on the four NKIBench kernels whose only engine-free work is such copies
(bmm, matmul_M4096_N12288, transpose_matmul, rmsnorm_matmul), the profiles show ScalarE 4-37 %
active and VectorE 0-4 %, where a balance would split them evenly. (The docs give no reason;
the measurement wins, docs/model.md "Engine choice".)
Switch: ``config.compiler.balance_engines``.
"""

from __future__ import annotations

from ..config import NeuronCoreConfig
from ..dtypes import is_float
from ..program.ir import Engine, Instruction, MemSpace, Opcode
from ..program.opcodes import ENGINE_PICKED

#: Operators ScalarE's multiply-add stage computes (scale, bias) on NeuronCore-v2.
SCALAR_ALU = frozenset({"add", "subtract", "multiply", None})
#: VectorE instructions that stream two input tensors (~2N cycles, arch.md 1.6).
_TWO_INPUTS = frozenset({Opcode.TENSOR_TENSOR, Opcode.TENSOR_TENSOR_SCAN,
                         Opcode.SCALAR_TENSOR_TENSOR, Opcode.TENSOR_COPY_PREDICATED})
_BALANCED = (Engine.VECTOR, Engine.SCALAR)


def _n(ins: Instruction) -> int:
    src = next(iter(ins.srcs.values()), None)
    return (src if src is not None else ins.out).free_size


def estimate_ns(ins: Instruction, engine: Engine, config: NeuronCoreConfig) -> float:
    """The compiler's estimate of ``ins`` on ``engine`` (VectorE or ScalarE), in ns."""
    n = _n(ins)
    if engine is Engine.VECTOR and ins.opcode is Opcode.RECIPROCAL:
        cycles = config.reciprocal_cycles_per_element * n
    elif engine is Engine.VECTOR and ins.opcode in _TWO_INPUTS:
        cycles = config.two_input_cycles_per_element * n
    else:
        cycles = n
    return config.cycles_to_ns(engine.value, max(config.min_ii_cycles, cycles))


def scalar_can_run(ins: Instruction, config: NeuronCoreConfig) -> bool:
    """Whether the compiler may move ``ins`` from VectorE to ScalarE."""
    if ins.engine is not Engine.VECTOR:
        return False
    if ins.opcode is Opcode.RECIPROCAL:
        return _n(ins) >= config.min_ii_cycles
    if not ins.attrs.get(ENGINE_PICKED):
        return False
    floats = all(is_float(a.dtype) for a in (*ins.srcs.values(), *ins.dsts.values()))
    if ins.opcode is Opcode.TENSOR_COPY:
        return floats
    if ins.opcode is Opcode.TENSOR_SCALAR:
        return floats and ins.attrs.get("op0") in SCALAR_ALU and ins.attrs.get("op1") in SCALAR_ALU
    return False


def psum_copy(ins: Instruction) -> bool:
    """Whether ``ins`` copies out of PSUM (what the compiler gives ScalarE)."""
    return ins.opcode is Opcode.TENSOR_COPY and any(
        a.space is MemSpace.PSUM for a in ins.srcs.values())


def choose_engines(instrs: list[Instruction], config: NeuronCoreConfig,
                   skip: frozenset[int] | set[int] | dict[int, int] = frozenset()
                   ) -> list[Instruction]:
    """``instrs`` with the movable ones on the engine that finishes them sooner, a copy out of
    PSUM on ScalarE (ids in
    ``skip``, loop-invariant repeats that cost nothing, stay and count nothing)."""
    load = {Engine.VECTOR: 0.0, Engine.SCALAR: 0.0}
    # estimate_ns depends on the opcode, the engine and _n only: remembered by them (speed)
    memo: dict[tuple[Opcode, Engine, int], float] = {}

    def estimate(ins: Instruction, engine: Engine) -> float:
        key = (ins.opcode, engine, _n(ins))
        got = memo.get(key)
        if got is None:
            got = memo[key] = estimate_ns(ins, engine, config)
        return got

    out = []
    for ins in instrs:
        if ins.id not in skip:
            if scalar_can_run(ins, config):
                v, s = (load[e] + estimate(ins, e) for e in _BALANCED)
                if s < v or psum_copy(ins):
                    ins = Instruction(ins.id, ins.opcode, Engine.SCALAR, ins.dsts, ins.srcs,
                                      ins.attrs, ins.loc, ins.mask, ins.instance, ins.loops)
            if ins.engine in load:
                load[ins.engine] += estimate(ins, ins.engine)
        out.append(ins)
    return out
