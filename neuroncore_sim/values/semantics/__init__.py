"""The executable specification: what every :class:`~neuroncore_sim.program.ir.Opcode`
computes, as numpy, one function per opcode.

Each function takes ``(srcs, attrs, outs, engine)`` (role -> source values, the instruction's
attrs, role -> :class:`Out` shape and dtype, the engine) and returns role -> values; executors
cast and store them. The table is built once, here, from its parts:

- :mod:`.core`: matmul, transpose, activation, the element-wise, reduction and scan
  instructions, copies, memset, iota, select, plain DMA (and the helpers they share);
- :mod:`.dma`: indirect (index-tile) DMAs and ``gather_flattened``;
- :mod:`.rng`: ``random_seed``, ``rand`` and ``dropout``;
- :mod:`.select`: the select, sort, gather, shuffle and dynamic-copy instructions.

A part's table overrides the core's for the same opcode (``dma_copy``: the DMA part handles the
indirect forms and falls back on the core's plain copy).
"""

from .core import (ACTIVATIONS, CORE_SEMANTICS, F32, Arrays, Out, Outs, Semantic, accumulate,
                   activation_input, canon, f32)
from .dma import DMA_SEMANTICS
from .rng import RANDOM_SEMANTICS
from .select import SELECT_SEMANTICS

#: Opcode -> its meaning (every opcode an executor can run).
SEMANTICS: dict = {**CORE_SEMANTICS, **DMA_SEMANTICS, **RANDOM_SEMANTICS, **SELECT_SEMANTICS}

__all__ = ["SEMANTICS", "Out", "Arrays", "Outs", "Semantic", "accumulate", "activation_input",
           "canon", "f32", "F32", "ACTIVATIONS"]
