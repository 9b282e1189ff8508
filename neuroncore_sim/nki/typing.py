"""``nki.typing``: the user-facing name of :mod:`neuroncore_sim.frontend.typing`.

This module *is* that module: importing it returns the front-end module object itself, so
``import neuroncore_sim.nki.typing`` and ``neuronxcc.nki.typing`` (after the alias) are one module.
"""

import sys as _sys

from ..frontend import typing as _impl

_sys.modules[__name__] = _impl
