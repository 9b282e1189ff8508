"""``nki.isa``: the user-facing name of :mod:`neuroncore_sim.frontend.isa`.

This module *is* that module: importing it returns the front-end module object itself, so
``import neuroncore_sim.nki.isa`` and ``neuronxcc.nki.isa`` (after the alias) are one module.
"""

import sys as _sys

from ..frontend import isa as _impl

_sys.modules[__name__] = _impl
