"""``nki.language``: the user-facing name of :mod:`neuroncore_sim.frontend.language`.

This module *is* that module: importing it returns the front-end module object itself, so
``import neuroncore_sim.nki.language`` and ``neuronxcc.nki.language`` (after the alias) are one module.
"""

import sys as _sys

from ..frontend import language as _impl

_sys.modules[__name__] = _impl
