"""Make ``import neuronxcc.nki...`` resolve to neuroncore_sim, on request only.

Kernels written for the AWS Neuron SDK import ``neuronxcc.nki``. After
:func:`install_neuronxcc_alias` those imports give this package's modules, so the kernels run
unmodified. Nothing happens on import of neuroncore_sim itself.
"""

from __future__ import annotations

import importlib.util
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
    resolve to ``neuroncore_sim.nki`` and its modules, and so do the deeper SDK paths real
    kernels import (``neuronxcc.nki.language.constants``, ``.isa.constants``, ``.nccl``, the
    private modules: see ``nki/sdk_paths.py``). When no real ``nki`` package is installed, the
    newer standalone name ``nki`` (``from nki.language.constants import sizeinbytes``) is
    registered the same way (a kernel written for the newer destination-first API then gets a
    KernelError saying so at its first such call).
    """
    from . import nki
    from .frontend import typing
    from .nki import compiler, isa, language, sdk_paths

    root = sys.modules.get("neuronxcc")
    if root is None or not getattr(root, "__neuroncore_sim_alias__", False):
        root = types.ModuleType("neuronxcc", "Alias of neuroncore_sim (NeuronCore-v2 simulator)")
        root.__neuroncore_sim_alias__ = True  # type: ignore[attr-defined]
        root.__path__ = []  # type: ignore[attr-defined]  (a package, so submodules import)
        sys.modules["neuronxcc"] = root
    root.nki = nki  # type: ignore[attr-defined]
    sys.modules["neuronxcc.nki"] = nki
    roots = ["neuronxcc.nki"]
    if sys.modules.get("nki") is nki or ("nki" not in sys.modules
                                         and importlib.util.find_spec("nki") is None):
        # NKI's newer standalone package name (``from nki.language.constants import ...``),
        # only when no real ``nki`` is installed
        sys.modules["nki"] = nki
        roots.append("nki")
    paths: dict[str, types.ModuleType] = {"language": language, "isa": isa, "typing": typing,
                                          "compiler": compiler}
    paths.update(sdk_paths.modules(language, isa))
    for prefix in roots:
        for path, module in paths.items():
            sys.modules[f"{prefix}.{path}"] = module
            parent, _, leaf = path.rpartition(".")
            setattr(paths[parent] if parent else nki, leaf, module)
    # (the compiler's internals, ``compiler.backends...``, import as unavailable modules: the
    # facade must be a package for the import system to look for them)
    if not hasattr(compiler, "__path__"):
        compiler.__path__ = []  # type: ignore[attr-defined]
    sdk_paths.install_finder(tuple(roots))
    _add_log_level_off()


def _add_log_level_off() -> None:
    """``logging.OFF``, as importing the real ``neuronxcc`` defines it (CS149's kernel files
    run ``logging.disable(logging.OFF)`` at import). A level the program already set is kept."""
    if not hasattr(logging, "OFF"):
        logging.OFF = NEURONXCC_LOG_OFF  # type: ignore[attr-defined]
        logging.addLevelName(NEURONXCC_LOG_OFF, "OFF")
