"""``nki.compiler``: the user-facing name of :mod:`neuroncore_sim.frontend.compiler`.

This module *is* that module: importing it returns the front-end module object itself, so
``import neuroncore_sim.nki.compiler`` and ``neuronxcc.nki.compiler`` (after the alias) are one module.
"""

import sys as _sys

from ..frontend import compiler as _impl

_sys.modules[__name__] = _impl
