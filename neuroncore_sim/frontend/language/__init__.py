"""``nki.language`` (nl): the facade that gathers ``nl``'s names from the modules that define them.

Tiles, buffers, loops, SPMD ids, data movement and math:

- buffers, ``nl.ndarray`` and the creation functions: :mod:`..alloc` (``zeros`` / ``ones`` /
  ``full`` on chip add a memset);
- ``load`` / ``store``: :mod:`..dma` (indexed by a tile: :mod:`..indirect`);
- element-wise math and reductions: :mod:`.nlmath`; dtypes, ``copy``, ``transpose``,
  ``matmul``: :mod:`.tiles`; the targets of ``t[...] = x`` and ``t += x``: :mod:`.assignment`;
- index expressions, loops and SPMD ids, randomness, gathers: :mod:`..indexing`,
  :mod:`..iteration`, :mod:`..rng`, :mod:`..gather`, :mod:`..loop_reduce`.

No front-end module imports this facade, except tensor.py (the one allowed cycle edge: a tile
forwards operators, assignments and tile-indexed views here). Anything of the NKI surface not
implemented yet raises ``UnsupportedError`` on access (module ``__getattr__``), never a bare
``AttributeError``. :mod:`neuroncore_sim.nki.language` shows NKI's names of this module only.
"""

from __future__ import annotations

from typing import Any

from ...errors import UnsupportedError
from .. import tracer as _tracer
from ..alloc import (Buffer, empty_like, fill, full, hbm, ndarray, ones, par_dim,  # noqa: F401
                     private_hbm, psum, sbuf, shared_constant, shared_hbm,
                     shared_identity_matrix, tile_size, zeros, zeros_like)
from ..dma import load, load_transpose2d, store  # noqa: F401
from ..gather import gather_flattened  # noqa: F401
from ..index.indexing import arange, ds, mgrid  # noqa: F401
from ..indirect import atomic_rmw  # noqa: F401
from ..iteration import (affine_range, nc, num_programs, program_id,  # noqa: F401
                         program_ndim, sequential_range, spmd_dim, static_range)
from ..loop_reduce import loop_reduce  # noqa: F401
from ..rng import nl_dropout as dropout, rand, random_seed  # noqa: F401
from .nlmath import *  # noqa: F401,F403  (the element-wise / reduction surface: nlmath.__all__)
from .tiles import (bfloat16, bfp16, bool_, copy, device_print, finfo, float8_e4m3,  # noqa: F401
                    float8_e5m2, float16, float32, fp16, fp32, int8, int16, int32, matmul,
                    tfloat32, transpose, uint8, uint16, uint32)
# What a tile forwards here (tensor.py), not NKI names (nki.language hides them): assignment,
# accumulation, and the views an index tile into HBM or a runtime offset on chip make.
from .assignment import accumulate, assign  # noqa: F401
from ..indirect import indirect_view  # noqa: F401
from ..isa.dynamic import assign_dynamic, dynamic_view  # noqa: F401

# NKI declares nl's functions with **kwargs; ours take the keywords they name (and name=) and
# report any other, and flags that are not bools, at the kernel line (api_keywords.py).
from . import nlmath as _nlmath  # noqa: E402
from ..api_keywords import known_keywords as _known_keywords  # noqa: E402

for _n in (*_nlmath.__all__, "copy", "transpose", "matmul", "dropout", "gather_flattened",
           "atomic_rmw", "device_print", "loop_reduce"):
    _f = globals()[_n]
    if callable(_f) and not isinstance(_f, type):
        globals()[_n] = _known_keywords(_f, f"nl.{_n}")

_UNSUPPORTED_HINT = "(it is part of the NKI surface neuroncore_sim does not implement yet)"


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    tr = _tracer.active_or_none()
    msg = f"nl.{name} is not supported by neuroncore_sim {_UNSUPPORTED_HINT}"
    raise tr.fail(UnsupportedError, msg) if tr is not None else UnsupportedError(msg)
