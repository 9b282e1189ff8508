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

Here each public instruction is wrapped once so that it takes NKI's ``name=`` keyword (and
reports other unknown keywords clearly); ``nisa.<name>`` and ``dir(nisa)`` see them all. Other
front-end modules (``nl``'s lowering) call the instruction modules directly.
"""

from __future__ import annotations

from typing import Any

from ...errors import UnsupportedError
from .. import tracer as _tracer
from ..api_keywords import accepts_name as _accepts_name
from . import compute as _compute, dynamic as _dynamic, selection as _selection
from . import transfers as _transfers
from .selection import V3_ONLY, v3_error

#: The instruction modules whose public names are ``nisa`` names.
_MODULES = (_compute, _dynamic, _selection, _transfers)

globals().update({_n: _v for _n, _v in vars(_compute).items()
                  if not _n.startswith("_") and getattr(_v, "__module__", None) == _compute.__name__})
globals().update({_n: getattr(_compute, _n) for _n in (
    "tensor_engine", "scalar_engine", "gpsimd_engine", "vector_engine", "sync_engine",
    "unknown_engine", "dropout")})
for _mod in (_dynamic, _selection, _transfers):
    globals().update({_n: getattr(_mod, _n) for _n in _mod.EXPORTS})

# NKI's instructions take ``name=`` (and report other unknown keywords clearly): wrap each
# public instruction of the instruction modules once, here.
_INSTRUCTION_MODULES = {_m.__name__ for _m in _MODULES}
for _n, _f in list(globals().items()):
    if (not _n.startswith("_") and callable(_f) and not isinstance(_f, type)
            and getattr(_f, "__module__", None) in _INSTRUCTION_MODULES and _n != "v3_error"):
        globals()[_n] = _accepts_name(_f, f"nisa.{_n}")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in V3_ONLY:
        raise v3_error(f"nisa.{name}")
    tr = _tracer.active_or_none()
    msg = (f"nisa.{name} is not supported by neuroncore_sim (it is part of the NKI surface "
           "not implemented yet, or not available on NeuronCore-v2)")
    raise tr.fail(UnsupportedError, msg) if tr is not None else UnsupportedError(msg)
