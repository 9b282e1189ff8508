"""Make ``import neuronxcc.nki...`` resolve to neuroncore_sim, on request only.

Kernels written for the AWS Neuron SDK import ``neuronxcc.nki``. After
:func:`install_neuronxcc_alias` those imports give this package's modules, so the kernels run
unmodified. Nothing happens on import of neuroncore_sim itself.
"""

from __future__ import annotations

import sys
import types


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
