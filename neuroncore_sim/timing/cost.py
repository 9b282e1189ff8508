"""Pure cost formulas: how long each instruction occupies its engine, in that engine's cycles.

Every compute formula is the "Estimated instruction cost" of the ``nki.isa`` docstrings
(shared/arch.md section 2, NC-v2, docs 2.22-2.26.1), written exactly as documented. ``N`` is the
number of elements per partition (``Access.free_size``) of the operand the docs name: the main
input (``data``, ``data1``, ``data0``, ``src``, ``on_true``) or, for ``memset`` and ``iota``, the
output. Costs the docs leave out are assumptions named in the config and in docs/model.md:

* ``tensor_partition_reduce``: ``GPSIMD_START + partition_reduce_cycles_per_element * N``.
* ``tensor_tensor`` on GpSimd (power, int ops): the VectorE formula in GpSimd cycles.
* ``memset`` on GpSimd: the VectorE formula in GpSimd cycles.
* DMA transfers: see :func:`dma_transfers`.
* the select / sort / gather / dynamic-copy family: see :mod:`neuroncore_sim.timing.cost_select`.

The access-pattern penalty (arch.md 1.4) multiplies the whole cost by ``stride_penalty_factor``
when the most-minor free stride of any SBUF/PSUM operand exceeds ``stride_penalty_min_bytes``.

No simpy here: these functions are plain arithmetic on an :class:`~neuroncore_sim.program.ir.Instruction`
and a :class:`~neuroncore_sim.config.NeuronCoreConfig`, testable on their own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

from ..config import NeuronCoreConfig
from .cost_select import SELECT_FORMULAS, SELECT_MAIN_ROLE
from ..dtypes import dtype_name
from .events import KernelWork
from ..program.ir import DMA_OPCODES, Access, Engine, Instruction, MemSpace, Opcode, Program

#: Opcodes executed by the DMA engines rather than a compute engine.

#: The operand whose free size is the ``N`` of each formula (memset/iota: the output).
_MAIN_ROLE: dict[Opcode, str] = {
    Opcode.NC_TRANSPOSE: "data", Opcode.ACTIVATION: "data", Opcode.ACTIVATION_REDUCE: "data",
    Opcode.TENSOR_TENSOR: "data1", Opcode.TENSOR_SCALAR: "data",
    Opcode.SCALAR_TENSOR_TENSOR: "data", Opcode.TENSOR_SCALAR_REDUCE: "data",
    Opcode.TENSOR_REDUCE: "data", Opcode.TENSOR_PARTITION_REDUCE: "data",
    Opcode.TENSOR_TENSOR_SCAN: "data0", Opcode.TENSOR_COPY: "src",
    Opcode.AFFINE_SELECT: "on_true", Opcode.RECIPROCAL: "data", Opcode.BN_STATS: "data",
    Opcode.BN_AGGR: "data", Opcode.DROPOUT: "data", Opcode.GATHER_FLATTENED: "indices",
    **SELECT_MAIN_ROLE,
}

_ON_CHIP = (MemSpace.SBUF, MemSpace.PSUM)
_BF16_FAST_OPS = frozenset({"add", "multiply", "subtract"})
_REDUCE_FAST_OPS = frozenset({"add", "maximum", "max"})


def main_operand(ins: Instruction) -> Access:
    """The operand whose free size is the ``N`` of ``ins``'s cost formula."""
    role = _MAIN_ROLE.get(ins.opcode)
    if role is not None and role in ins.srcs:
        return ins.srcs[role]
    if ins.opcode in (Opcode.MEMSET, Opcode.IOTA, Opcode.RAND, Opcode.RANDOM_SEED) or not ins.srcs:
        return ins.out
    return next(iter(ins.srcs.values()))


def _is_bf16(a: Access) -> bool:
    return dtype_name(a.dtype) == "bfloat16"


def _minor_free_stride(a: Access) -> int:
    """Element stride of the most-minor free dim that has more than one element (0 if none)."""
    for stride, n in reversed(a.pattern[1:]):
        if n > 1:
            return abs(stride)
    return 0


def stride_penalty(ins: Instruction, config: NeuronCoreConfig) -> float:
    """``stride_penalty_factor`` if any SBUF/PSUM operand's most-minor free stride is above
    ``stride_penalty_min_bytes`` (arch.md 1.4: interface bandwidth halves), else 1."""
    for a in (*ins.srcs.values(), *ins.dsts.values()):  # (not accesses(): hot, speed)
        if a.tensor.space in _ON_CHIP and (
                _minor_free_stride(a) * a.dtype.itemsize > config.stride_penalty_min_bytes):
            return config.stride_penalty_factor
    return 1.0


# --- the documented formulas (engine cycles, before the stride penalty) --------------------------

def _one_input(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    """``max(MIN_II, N)``: activation, tensor_scalar, tensor_copy, bn_stats, Vector transpose."""
    return max(c.min_ii_cycles, n)


def _activation(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    base = max(c.min_ii_cycles, n)
    # activation with a reduce_res output also runs ActReadAccumulator (arch.md 1.7).
    return base + c.act_read_accumulator_cycles if "reduce_res" in ins.dsts else base


def _plus_min_ii(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    """``max(MIN_II, N) + MIN_II``: activation_reduce, tensor_scalar_reduce."""
    return max(c.min_ii_cycles, n) + c.min_ii_cycles


def _tensor_tensor(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    d1, d2 = ins.srcs["data1"], ins.srcs["data2"]
    spaces = {d1.space, d2.space}
    if spaces == {MemSpace.SBUF, MemSpace.PSUM}:
        return max(c.min_ii_cycles, n)
    operands = (d1, d2, ins.out)
    if (spaces == {MemSpace.SBUF} and all(_is_bf16(a) for a in operands)
            and ins.attrs.get("op") in _BF16_FAST_OPS
            and all(_minor_free_stride(a) <= 1 for a in operands)):
        return max(c.min_ii_cycles, n)
    return max(c.min_ii_cycles, c.two_input_cycles_per_element * n)


def _two_input(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    """``max(MIN_II, 2N)``: tensor_tensor_scan."""
    return max(c.min_ii_cycles, c.two_input_cycles_per_element * n)


def _scalar_tensor_tensor(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    # Documented without MIN_II: N for the bf16 subtract-then-multiply fast path, else 2N;
    # floored at MIN_II as every instruction is (measured, see _tensor_reduce).
    data, op1 = ins.srcs["data"], ins.srcs.get("operand1")
    if (op1 is not None and _is_bf16(data) and _is_bf16(op1)
            and ins.attrs.get("op0") == "subtract" and ins.attrs.get("op1") == "multiply"
            and n % 2 == 0):
        return max(c.min_ii_cycles, n)
    return max(c.min_ii_cycles, c.two_input_cycles_per_element * n)


def _tensor_scalar(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    base = max(c.min_ii_cycles, n)
    if ins.engine is Engine.GPSIMD and "rsqrt" in (ins.attrs.get("op0"), ins.attrs.get("op1")):
        return base * c.gpsimd_rsqrt_slowdown
    return base


def _tensor_reduce(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    # Documented without MIN_II: N/2 for bf16 in and out with add or max, else N. Measured
    # floor: Autocomp's conv1d profile (SDK 2.26) shows independent [128, 3] fp32 reduces at
    # 62.9 ns each, not the formula's 3 cycles: MIN_II ([ISASRC]) bounds every instruction.
    if (_is_bf16(ins.srcs["data"]) and _is_bf16(ins.out)
            and ins.attrs.get("op") in _REDUCE_FAST_OPS):
        return max(c.min_ii_cycles, n / c.bf16_fast_path_divisor)
    return max(c.min_ii_cycles, n)


def _memset(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    value = ins.attrs.get("value", None)
    if value == 0 and dtype_name(ins.out.dtype) in ("bfloat16", "float16"):
        return max(c.min_ii_cycles, n / c.bf16_fast_path_divisor)
    return max(c.min_ii_cycles, n)


def _gpsimd_start_plus_n(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    """``GPSIMD_START + N``: iota, affine_select."""
    return c.gpsimd_start_cycles + n


def _partition_reduce(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    # assumption (undocumented): start overhead, then read N and combine N across cores.
    return c.gpsimd_start_cycles + c.partition_reduce_cycles_per_element * n


def _reciprocal(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    if ins.engine is Engine.SCALAR:  # activation(reciprocal) on ScalarE: max(MIN_II, N)
        return max(c.min_ii_cycles, n)
    return max(c.min_ii_cycles, c.reciprocal_cycles_per_element * n)


def _bn_aggr(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    return max(c.min_ii_cycles, c.bn_aggr_cycles_per_group * (n / c.bn_aggr_group_elements))


def _nc_transpose(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    if ins.engine is Engine.TENSOR:  # back-to-back same shape: max(P, min(64, F))
        data = ins.srcs["data"]
        # A TensorE transpose is a matmul by the identity (arch.md): fp32 data takes the fp32
        # matmul's passes and is not auto-cast (a transpose moves values, it must not round
        # them). Measured: Autocomp's attention v7 casts its fp32 V blocks to bf16 before
        # transposing them and runs 15 % faster than v6 (docs/model.md).
        passes = c.fp32_matmul_slowdown if dtype_name(data.dtype) == "float32" else 1.0
        return passes * max(data.partitions, min(c.mm_init_latency_cycles, data.free_size))
    return max(c.min_ii_cycles, n)


def _nc_matmul(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    return matmul_average_cycles(ins, c)


_FORMULAS: dict[Opcode, Callable[[Instruction, NeuronCoreConfig, int], float]] = {
    Opcode.NC_MATMUL: _nc_matmul,
    Opcode.NC_TRANSPOSE: _nc_transpose,
    Opcode.ACTIVATION: _activation,
    Opcode.ACTIVATION_REDUCE: _plus_min_ii,
    Opcode.TENSOR_TENSOR: _tensor_tensor,
    Opcode.TENSOR_SCALAR: _tensor_scalar,
    Opcode.SCALAR_TENSOR_TENSOR: _scalar_tensor_tensor,
    Opcode.TENSOR_SCALAR_REDUCE: _plus_min_ii,
    Opcode.TENSOR_REDUCE: _tensor_reduce,
    Opcode.TENSOR_PARTITION_REDUCE: _partition_reduce,
    Opcode.TENSOR_TENSOR_SCAN: _two_input,
    Opcode.TENSOR_COPY: _one_input,
    Opcode.MEMSET: _memset,
    Opcode.IOTA: _gpsimd_start_plus_n,
    Opcode.AFFINE_SELECT: _gpsimd_start_plus_n,
    Opcode.RECIPROCAL: _reciprocal,
    Opcode.BN_STATS: _one_input,
    Opcode.BN_AGGR: _bn_aggr,
    Opcode.DROPOUT: _one_input,  # documented: max(MIN_II, N)
    # assumptions (docs/frontend.md): no nki.isa instruction documents these
    Opcode.RAND: _one_input, Opcode.RANDOM_SEED: _one_input,
    Opcode.GATHER_FLATTENED: _gpsimd_start_plus_n,
    **SELECT_FORMULAS,
}


def instruction_cycles(ins: Instruction, config: NeuronCoreConfig) -> float:
    """Engine occupancy of a compute instruction in its engine's cycles (documented formula
    times the stride penalty). For nc_matmul this is the documented *average* cost, which the
    timing model reproduces as the MultiplyMoving stage (see :func:`matmul_stage_cycles`).

    Raises:
        KeyError: for DMA opcodes (use :func:`dma_transfers`).
    """
    n = main_operand(ins).free_size
    return _FORMULAS[ins.opcode](ins, config, n) * stride_penalty(ins, config)


def _matmul_dtype_factor(ins: Instruction, c: NeuronCoreConfig) -> float:
    st, mv = ins.srcs["stationary"], ins.srcs["moving"]
    if "float32" not in (dtype_name(st.dtype), dtype_name(mv.dtype)) or ins.attrs.get("auto_cast"):
        return 1.0  # (the compile stage's auto-cast runs fp32 inputs as bf16)
    onezero = ins.attrs.get("is_stationary_onezero") or ins.attrs.get("is_moving_onezero")
    return c.fp32_matmul_slowdown / (c.onezero_fp32_speedup if onezero else 1.0)


def matmul_average_cycles(ins: Instruction, config: NeuronCoreConfig) -> float:
    """``max(min(64, N_stationary), N_moving)`` TensorE cycles, x4 for fp32 inputs (x2 with a
    onezero hint), before the stride penalty."""
    n_st = ins.srcs["stationary"].free_size
    n_mv = ins.srcs["moving"].free_size
    base = max(min(config.mm_init_latency_cycles, n_st), n_mv)
    return base * _matmul_dtype_factor(ins, config)


def matmul_stage_cycles(ins: Instruction, config: NeuronCoreConfig) -> tuple[float, float]:
    """(LoadStationary, MultiplyMoving) TensorE cycles of an nc_matmul.

    MultiplyMoving = the documented average cost, LoadStationary = N_stationary /
    load_stationary_speedup (same dtype factor). LoadStationary never exceeds MultiplyMoving,
    so with background loading a stream of same-shape matmuls issues one every MultiplyMoving.
    """
    penalty = stride_penalty(ins, config)
    factor = _matmul_dtype_factor(ins, config)  # (once: it runs per matmul)
    n_st = ins.srcs["stationary"].free_size
    base = max(min(config.mm_init_latency_cycles, n_st), ins.srcs["moving"].free_size)
    mm = base * factor * penalty  # = matmul_average_cycles() * penalty
    ls = n_st / config.load_stationary_speedup * factor * penalty
    return min(ls, mm), mm


def cycles_to_ns(engine: Engine | str, cycles: float, config: NeuronCoreConfig) -> float:
    """Nanoseconds of ``cycles`` at ``engine``'s clock."""
    name = engine.value if isinstance(engine, Engine) else engine
    return config.cycles_to_ns(name, cycles)


def pipeline_latency_ns(engine: Engine, config: NeuronCoreConfig) -> float:
    """Time from an instruction's end on ``engine`` until its results are in SRAM.

    TensorE: ``tensor_pipeline_latency_ns`` (profile MATMUL durations less their occupancy);
    ScalarE: ``scalar_pipeline_latency_cycles`` (static overhead + access overhead, checked on
    the profile of dependent [128, 1] activations); the others: ``engine_pipeline_latency_cycles``
    of their own clock. DMA: 0 (a transfer ends when written).
    """
    if engine is Engine.TENSOR:
        return config.tensor_pipeline_latency_ns
    if engine is Engine.SCALAR:
        return config.cycles_to_ns("scalar", config.scalar_pipeline_latency_cycles)
    if engine is Engine.DMA:
        return 0.0
    return config.cycles_to_ns(engine.value, config.engine_pipeline_latency_cycles)


# --- DMA ------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DmaTransfer:
    """The part of a DMA instruction one DMA engine moves.

    Attributes:
        buffers: DMA buffers (descriptors) in the transfer.
        nbytes: bytes moved.
        engine_ns: how long it occupies its DMA engine.
        hbm_bytes: bytes it reads from plus writes to HBM.
    """

    buffers: int
    nbytes: int
    engine_ns: float
    hbm_bytes: int


def _runs(pattern: tuple[tuple[int, int], ...]) -> int:
    """Number of contiguous element runs of a (stride, size) pattern."""
    dims = [(s, n) for s, n in pattern if n != 1]
    run = 1
    while dims and dims[-1][0] == run:
        run *= dims.pop()[1]
    return math.prod(n for _, n in dims) if dims else 1


def dma_buffers(a: Access) -> int:
    """DMA buffers needed on one side: every SBUF/PSUM partition is its own buffer (arch.md
    1.9, the SBUF address map), plus one per break in the free slice; HBM: contiguous runs."""
    if a.space in _ON_CHIP:
        return max(1, a.partitions) * _runs(a.pattern[1:])
    return _runs(a.pattern)


def dma_direction(src: MemSpace, dst: MemSpace) -> str:
    """What sets a DMA's rate: "read" (it reads HBM), "write" (it writes HBM without reading
    it) or "copy" (on chip)."""
    return "read" if src is MemSpace.HBM else "write" if dst is MemSpace.HBM else "copy"


def dma_rate(src: MemSpace, dst: MemSpace, config: NeuronCoreConfig) -> float:
    """Bytes per ns one DMA engine moves for a DMA from ``src`` to ``dst``
    (:func:`dma_direction`): reading HBM at ``dma_hbm_read_bytes_per_ns``, writing HBM at
    ``dma_hbm_write_bytes_per_ns`` (both [DMABW]'s 17 B/ns on trn1), copying on chip at
    ``dma_engine_bytes_per_ns`` ([PERF fig30])."""
    direction = dma_direction(src, dst)
    if direction == "read":
        return config.dma_hbm_read_bytes_per_ns
    if direction == "write":
        return config.dma_hbm_write_bytes_per_ns
    return config.dma_engine_bytes_per_ns


def dma_transfers(ins: Instruction, config: NeuronCoreConfig) -> tuple[DmaTransfer, ...]:
    """Split a dma_copy / dma_transpose over the DMA engines (arch.md 1.9).

    The instruction needs ``B = max(buffers of either side)`` DMA buffers (for a transpose:
    those of its SBUF side, or its destination). They are dealt to ``min(dma_engines, B)``
    transfers of consecutive buffers (128 partitions -> 16 engines x 8 partitions). A buffer of
    ``b`` bytes occupies its engine for ``max(dma_buffer_overhead_ns, b /
    dma_engine_bytes_per_ns)`` (assumption: descriptor processing overlaps the data of the
    previous buffer, so small buffers are overhead-bound and large ones bandwidth-bound; fitted
    to the bytes-per-partition curve, see docs/model.md), times ``dma_transpose_slowdown`` for a
    transpose.
    """
    src, dst = ins.srcs["src"], ins.out
    nbytes = max(src.nbytes, dst.nbytes)
    indirect = ins.attrs.get("indirect")
    if ins.opcode is Opcode.DMA_TRANSPOSE:
        side = src if src.space in _ON_CHIP else dst
        buffers, slowdown = dma_buffers(side), config.dma_transpose_slowdown
    elif indirect is not None:
        # Only the gathered / scattered rows move: one descriptor per row of the index tile
        # (times the contiguous runs of a row), against the tile side's own buffers.
        tile, table = (dst, src) if indirect == "src" else (src, dst)
        nbytes = tile.nbytes
        rows = ins.srcs["index"].partitions * _runs(table.pattern[1:])
        buffers, slowdown = max(dma_buffers(tile), rows), 1.0
    else:
        buffers, slowdown = max(dma_buffers(src), dma_buffers(dst)), 1.0
    if ins.attrs.get("dst_rmw_op") is not None:
        slowdown *= config.dma_rmw_passes  # the destination is read, then written back
    buffers = max(1, min(buffers, nbytes)) if nbytes else 1
    hbm_sides = (src.space is MemSpace.HBM) + (dst.space is MemSpace.HBM)
    if ins.attrs.get("dst_rmw_op") is not None and dst.space is MemSpace.HBM:
        hbm_sides += 1  # read-modify-write reads the HBM destination too
    n_transfers = min(config.dma_engines, buffers)
    rate = dma_rate(src.space, dst.space, config)
    out = []
    for t in range(n_transfers):
        b_lo, b_hi = buffers * t // n_transfers, buffers * (t + 1) // n_transfers
        t_bytes = nbytes * b_hi // buffers - nbytes * b_lo // buffers
        per_buffer = max(config.dma_buffer_overhead_ns, (t_bytes / (b_hi - b_lo)) / rate)
        out.append(DmaTransfer(buffers=b_hi - b_lo, nbytes=t_bytes,
                               engine_ns=(b_hi - b_lo) * per_buffer * slowdown,
                               hbm_bytes=t_bytes * hbm_sides))
    return tuple(out)


# --- bounds ---------------------------------------------------------------------------------------

def kernel_work(instructions: Iterable[Instruction], config: NeuronCoreConfig) -> KernelWork:
    """The launch's useful matmul FLOPs (and their time at the dtype's TensorE peak), DMA bytes
    and HBM bytes.

    TensorE peak: ``num_partitions x gemm_stationary_fmax`` MACs per cycle at
    ``tensor_clock_hz`` (arch.md: 91.75 TFLOPS bf16); fp32 operands divide it by the same
    dtype factor as the matmul cost formula.
    """
    macs_per_ns = (config.num_partitions * config.gemm_stationary_fmax
                   * config.tensor_clock_hz / 1e9)
    flops = dma_bytes = hbm_bytes = read_bytes = write_bytes = 0
    mm_ns = 0.0
    for ins in instructions:
        if ins.opcode is Opcode.NC_MATMUL:
            st, mv = ins.srcs["stationary"], ins.srcs["moving"]
            macs = st.partitions * st.free_size * mv.free_size
            flops += 2 * macs
            mm_ns += macs / macs_per_ns * _matmul_dtype_factor(ins, config)
        elif ins.opcode in DMA_OPCODES:
            src, dst = ins.srcs["src"], ins.out
            nbytes = max(src.nbytes, dst.nbytes)
            dma_bytes += nbytes
            hbm_bytes += nbytes * ((src.space is MemSpace.HBM) + (dst.space is MemSpace.HBM))
            if src.space is MemSpace.HBM:
                read_bytes += nbytes
            elif dst.space is MemSpace.HBM:
                write_bytes += nbytes
    return KernelWork(flops, mm_ns, dma_bytes, hbm_bytes, read_bytes, write_bytes)


def dma_engines_ns(work: KernelWork, config: NeuronCoreConfig) -> float:
    """The shortest time the DMA engines can move ``work``'s bytes: each byte at its engine's
    rate (:func:`dma_rate`: ``dma_hbm_read_bytes_per_ns`` for DMAs reading HBM,
    ``dma_hbm_write_bytes_per_ns`` for DMAs writing it, ``dma_engine_bytes_per_ns`` for on-chip
    copies), spread over all ``dma_engines``."""
    other = work.dma_bytes - work.dma_hbm_read_bytes - work.dma_hbm_write_bytes
    return (work.dma_hbm_read_bytes / config.dma_hbm_read_bytes_per_ns
            + work.dma_hbm_write_bytes / config.dma_hbm_write_bytes_per_ns
            + other / config.dma_engine_bytes_per_ns) / config.dma_engines


def roofline_ns(program: Program, config: NeuronCoreConfig) -> float:
    """A lower bound on the latency: the largest of matmul FLOPs at TensorE peak, DMA bytes at
    the DMA engines' rates, and HBM bytes at the HBM bandwidth."""
    w = kernel_work(program.instructions, config)
    return max(w.matmul_peak_ns, dma_engines_ns(w, config), w.hbm_bytes / config.hbm_bytes_per_ns)
