"""Make ``import neuronxcc.nki...`` resolve to neuroncore_sim, on request only.

Kernels written for the AWS Neuron SDK import ``neuronxcc.nki``. After
:func:`install_neuronxcc_alias` those imports give this package's modules, so the kernels run
unmodified. Nothing happens on import of neuroncore_sim itself.
"""

from __future__ import annotations

import logging
import sys
import types

#: the log level the Neuron compiler registers when ``neuronxcc`` is imported (above CRITICAL);
#: kernel files written for it call ``logging.disable(logging.OFF)`` to quiet the compiler
NEURONXCC_LOG_OFF = 60


def install_neuronxcc_alias() -> None:
    """Register ``neuronxcc``, ``neuronxcc.nki`` and its submodules as aliases of ours.

    Idempotent. Afterwards ``from neuronxcc import nki``, ``import neuronxcc.nki.language as
    nl``, ``neuronxcc.nki.isa``, ``neuronxcc.nki.typing`` and ``neuronxcc.nki.compiler``
    resolve to ``neuroncore_sim.nki`` and its modules.
    """
    from . import nki
    from .frontend import compiler, isa, typing
    from .nki import language

    root = sys.modules.get("neuronxcc")
    if root is None or not getattr(root, "__neuroncore_sim_alias__", False):
        root = types.ModuleType("neuronxcc", "Alias of neuroncore_sim (NeuronCore-v2 simulator)")
        root.__neuroncore_sim_alias__ = True  # type: ignore[attr-defined]
        root.__path__ = []  # type: ignore[attr-defined]  (a package, so submodules import)
        sys.modules["neuronxcc"] = root
    root.nki = nki  # type: ignore[attr-defined]
    sys.modules["neuronxcc.nki"] = nki
    for name, module in (("language", language), ("isa", isa), ("typing", typing),
                         ("compiler", compiler)):
        sys.modules[f"neuronxcc.nki.{name}"] = module
        setattr(nki, name, module)
    _add_log_level_off()


def _add_log_level_off() -> None:
    """``logging.OFF``, as importing the real ``neuronxcc`` defines it (CS149's kernel files
    run ``logging.disable(logging.OFF)`` at import). A level the program already set is kept."""
    if not hasattr(logging, "OFF"):
        logging.OFF = NEURONXCC_LOG_OFF  # type: ignore[attr-defined]
        logging.addLevelName(NEURONXCC_LOG_OFF, "OFF")
