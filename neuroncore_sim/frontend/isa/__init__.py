"""``nki.isa`` (nisa): the facade that gathers the instruction modules of this package.

One function per NeuronCore-v2 instruction. Each checks its operands against the rules the NKI
API reference (docs 2.20-2.26) states, picks the engine (the ``engine=`` argument, else the
documented default), and records one instruction; the executor computes the value. Results are
new tiles: SBUF, except TensorE results, which are in PSUM.

The instructions live in the modules of this package, each importing only lower modules (never
this facade):

- :mod:`.compute`: TensorE, VectorE, ScalarE and GpSimd instructions, and the enums
  (``engine``, ``oob_mode``, ...);
- :mod:`.selection`: select, sort, gather and shuffle instructions, and the v3-only names;
- :mod:`.dynamic`: the copies with a runtime (SBUF-held) offset;
- :mod:`.transfers`: ``dma_copy`` and ``dma_transpose``.

Every ``nisa`` name is imported here by name, so a reader and a linter see them; each
instruction of ``_INSTRUCTIONS`` is wrapped once so that it takes NKI's ``name=`` keyword (and
reports other unknown keywords clearly). Other front-end modules (``nl``'s lowering) call the
instruction modules directly.
"""

from __future__ import annotations

from typing import Any

from ...errors import UnsupportedError
from .. import tracer as _tracer
from ..api_keywords import accepts_name as _accepts_name
from . import compute, dynamic, selection, transfers  # noqa: F401  (the instruction modules)
from .compute import (activation, activation_reduce, affine_select, bn_aggr, bn_stats,
                      dge_mode, dropout, engine, get_nc_version, gpsimd_engine, iota, memset,
                      nc_matmul, nc_transpose, nc_version, oob_mode, reciprocal, reduce_cmd,
                      scalar_engine, scalar_tensor_tensor, sync_engine, tensor_copy,
                      tensor_engine, tensor_reduce, tensor_scalar, tensor_scalar_reduce,
                      tensor_tensor, tensor_tensor_scan, unknown_engine, vector_engine)
from .dynamic import tensor_copy_dynamic_dst, tensor_copy_dynamic_src
from .selection import (V3_ONLY, dma_engine, fp32, local_gather, max8, nc_find_index8,
                        nc_match_replace8, nc_stream_shuffle, range_select, select_reduce,
                        sequence_bounds, tensor_copy_predicated, tensor_partition_reduce,
                        v3_error)
from .transfers import dma_copy, dma_transpose

#: The instructions: each takes NKI's ``name=`` (and reports other unknown keywords clearly),
#: wrapped once, here (the instruction modules' own functions stay unwrapped for ``nl``).
_INSTRUCTIONS = (
    "activation", "activation_reduce", "affine_select", "bn_aggr", "bn_stats", "dma_copy",
    "dma_transpose", "get_nc_version", "iota", "local_gather", "max8", "memset",
    "nc_find_index8", "nc_match_replace8", "nc_matmul", "nc_stream_shuffle", "nc_transpose",
    "range_select", "reciprocal", "scalar_tensor_tensor", "select_reduce", "sequence_bounds",
    "tensor_copy", "tensor_copy_dynamic_dst", "tensor_copy_dynamic_src",
    "tensor_copy_predicated", "tensor_partition_reduce", "tensor_reduce", "tensor_scalar",
    "tensor_scalar_reduce", "tensor_tensor", "tensor_tensor_scan")
for _n in _INSTRUCTIONS:
    globals()[_n] = _accepts_name(globals()[_n], f"nisa.{_n}")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in V3_ONLY:
        raise v3_error(f"nisa.{name}")
    tr = _tracer.active_or_none()
    msg = (f"nisa.{name} is not supported by neuroncore_sim (it is part of the NKI surface "
           "not implemented yet, or not available on NeuronCore-v2)")
    raise tr.fail(UnsupportedError, msg) if tr is not None else UnsupportedError(msg)
