"""Cost formulas of the select, sort, gather, shuffle and dynamic-copy instructions.

Same contract as the formulas in :mod:`neuroncore_sim.timing.cost` (``fn(ins, config, n)`` -> engine
cycles before the stride penalty; ``n`` is the free size of the operand
:data:`SELECT_MAIN_ROLE` names); ``cost.py`` merges these tables into its own. Documented
formulas (shared/arch.md section 2, docs 2.26.1) are written as documented; the others are
assumptions, listed in docs/model.md:

* ``tensor_copy_predicated`` with a scalar ``src``: one streamed input, ``max(MIN_II, N)``.
* ``select_reduce``: the tensor_copy_predicated formula with ``on_true`` in the place of
  ``src``, plus ``MIN_II`` when ``reduce_res`` reads the registers (as tensor_scalar_reduce).
* ``nc_match_replace8``: ``max(MIN_II, N)`` (the 2.26.1 text says ``min``, a typo; 2.24: ``N``).
* ``max8`` / ``nc_find_index8``: the docs name no engine; we run them on VectorE.
* ``sequence_bounds``: ``GPSIMD_START + SEQUENCE_BOUNDS_PASSES * N``.
"""

from __future__ import annotations

from typing import Callable

from ..config import NeuronCoreConfig
from ..program.ir import Access, Instruction, MemSpace, Opcode

#: local_gather cost constants: ``C = ((28 + t*E) / (t*E)) / min(4 / dtype_size, E)``.
LOCAL_GATHER_T = 4  # source: [ISA-local_gather] "t is a constant 4"
LOCAL_GATHER_INDEX_CYCLES = 28  # source: [ISA-local_gather] the 28 of C
GPSIMD_WORD_BYTES = 4  # source: [ISA-local_gather] the 4 of min(4/dtype_size, E); 32-bit lanes
#: assumption: sequence_bounds scans its N ids twice (forward for starts, backward for ends).
SEQUENCE_BOUNDS_PASSES = 2

#: The operand whose free size is ``n`` (dynamic src: its output, the src role spans the range
#: of the runtime offset).
SELECT_MAIN_ROLE: dict[Opcode, str] = {
    Opcode.TENSOR_COPY_DYNAMIC_DST: "src", Opcode.TENSOR_COPY_PREDICATED: "predicate",
    Opcode.SELECT_REDUCE: "on_true", Opcode.LOCAL_GATHER: "index", Opcode.MAX8: "src",
    Opcode.NC_FIND_INDEX8: "data", Opcode.NC_MATCH_REPLACE8: "data",
    Opcode.NC_STREAM_SHUFFLE: "src", Opcode.SEQUENCE_BOUNDS: "segment_ids",
}


def _dynamic_copy(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    """``max(MIN_II_DYNAMIC, N)``, N = elements per partition copied."""
    if ins.opcode is Opcode.TENSOR_COPY_DYNAMIC_SRC:
        n = ins.out.free_size
    return max(c.min_ii_dynamic_cycles, n)


def _streamed(c: NeuronCoreConfig, n: int, *tiles: Access | None) -> float:
    """``max(MIN_II, N)`` when one streamed input is in PSUM (or only one input is a tile),
    ``max(MIN_II, 2N)`` when both are in SBUF."""
    spaces = [t.space for t in tiles if t is not None]
    if len(spaces) == 2 and all(s is MemSpace.SBUF for s in spaces):
        return max(c.min_ii_cycles, c.two_input_cycles_per_element * n)
    return max(c.min_ii_cycles, n)


def _copy_predicated(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    return _streamed(c, n, ins.srcs.get("src"), ins.srcs["predicate"])


def _select_reduce(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    base = _streamed(c, n, ins.srcs["on_true"], ins.srcs["predicate"])
    return base + c.min_ii_cycles if "reduce_res" in ins.dsts else base


def _local_gather(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    """``150 + (num_valid_indices * num_elem_per_idx) / C`` GpSimd cycles."""
    e = int(ins.attrs["num_elem_per_idx"])  # type: ignore[call-overload]
    v = int(ins.attrs["num_valid_indices"])  # type: ignore[call-overload]
    t = LOCAL_GATHER_T
    size = ins.srcs["src"].dtype.itemsize
    per = ((LOCAL_GATHER_INDEX_CYCLES + t * e) / (t * e)) / min(GPSIMD_WORD_BYTES / size, e)
    return c.gpsimd_start_cycles + v * e / per


def _n(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    """``N`` engine cycles (max8, nc_find_index8: documented without MIN_II)."""
    return float(n)


def _min_ii_or_n(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    """``max(MIN_II, N)``: nc_stream_shuffle, nc_match_replace8."""
    return max(c.min_ii_cycles, n)


def _sequence_bounds(ins: Instruction, c: NeuronCoreConfig, n: int) -> float:
    return c.gpsimd_start_cycles + SEQUENCE_BOUNDS_PASSES * n


SELECT_FORMULAS: dict[Opcode, Callable[[Instruction, NeuronCoreConfig, int], float]] = {
    Opcode.TENSOR_COPY_DYNAMIC_SRC: _dynamic_copy,
    Opcode.TENSOR_COPY_DYNAMIC_DST: _dynamic_copy,
    Opcode.TENSOR_COPY_PREDICATED: _copy_predicated,
    Opcode.SELECT_REDUCE: _select_reduce,
    Opcode.LOCAL_GATHER: _local_gather,
    Opcode.MAX8: _n,
    Opcode.NC_FIND_INDEX8: _n,
    Opcode.NC_MATCH_REPLACE8: _min_ii_or_n,
    Opcode.NC_STREAM_SHUFFLE: _min_ii_or_n,
    Opcode.SEQUENCE_BOUNDS: _sequence_bounds,
}
