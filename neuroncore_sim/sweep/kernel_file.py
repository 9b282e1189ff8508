"""Kernel files: the ``kernels/*.py`` convention shared by ``neuroncore-sim profile`` and sweeps.

A kernel file defines one or more ``@nki.jit`` kernels (``kernel``, or a module-level ``KERNELS``
dict naming several), ``example_inputs(**shape_params)`` returning the kernel's inputs (a dict of
numpy arrays, or a sequence of positional ones) and optionally ``reference(*inputs,
**kernel_params)``, the numpy result to compare against, and ``GRID``, the SPMD launch grid.

A target names a kernel in a file as ``"path/file.py::kernel"``, or ``"path/file.py"`` for the
file's default kernel (``kernel``, or the only entry of ``KERNELS``).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..alias import install_neuronxcc_alias
from ..errors import SimulatorError


class UsageError(SimulatorError):
    """A kernel file or kernel name given on the command line or to the API does not exist."""


def load_kernel_file(path: Path) -> Any:
    """Import a kernel file by path (a fresh module each call) with the ``neuronxcc`` alias on."""
    if not path.is_file() or path.suffix != ".py":
        raise UsageError(f"kernel file not found (expected FILE.py): {path}")
    install_neuronxcc_alias()  # kernel files written for the real NKI import neuronxcc
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # sample kernels import their siblings
    name = re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py file always has a loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def find_kernel(module: Any, name: str | None) -> tuple[str, Any]:
    """The kernel called ``name`` in a loaded kernel file (``None``: its default kernel)."""
    kernels = dict(getattr(module, "KERNELS", {}) or {})
    if name is None:
        if hasattr(module, "kernel"):
            return "kernel", module.kernel
        if len(kernels) == 1:
            return next(iter(kernels.items()))
        if not kernels:  # a script, say: `neuroncore-sim run` is what times those
            raise UsageError(f"{module.__file__}: expected a kernel file (a `kernel` function "
                             "or a KERNELS table, and example_inputs()), found neither; name "
                             "one as FILE.py::KERNEL, or time a script with "
                             "`neuroncore-sim run`")
        raise UsageError(f"{module.__file__}: name the kernel as FILE.py::KERNEL; "
                         f"choices: {', '.join(kernels)}")
    if name in kernels:
        return name, kernels[name]
    fn = getattr(module, name, None)
    if not callable(fn):
        raise UsageError(f"{module.__file__} has no kernel {name!r}"
                         + (f"; choices: {', '.join(kernels)}" if kernels else ""))
    return name, fn


def split_target(target: str) -> tuple[Path, str | None]:
    """``"file.py::kernel"`` -> (path, "kernel"); ``"file.py"`` -> (path, None)."""
    file, _, name = str(target).partition("::")
    return Path(file), (name or None)


def example_inputs(module: Any, file: object, **shape_params: Any) -> tuple[tuple, dict]:
    """Call the file's ``example_inputs(**shape_params)``; returns (positional, keyword) args."""
    make = getattr(module, "example_inputs", None)
    if not callable(make):
        raise UsageError(f"{file} has no example_inputs() to take the kernel's inputs from")
    inputs = make(**shape_params)
    return ((), dict(inputs)) if isinstance(inputs, dict) else (tuple(inputs), {})


def max_abs_error(outputs: Sequence[Any], expected: Any) -> float:
    """Largest absolute difference between the kernel's outputs and the reference's result
    (one array, or a tuple/list of them), compared in float64; ``inf`` when shapes differ."""
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    if len(expected) != len(outputs):
        raise UsageError(f"reference returned {len(expected)} result(s), the kernel "
                         f"{len(outputs)}; expected as many as the kernel returns")
    errors = []
    for got, ref in zip(outputs, expected):
        got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
        # A shape that differs from the reference's is a wrong result, not a broadcast.
        errors.append(float(np.max(np.abs(got - ref))) if got.shape == ref.shape else np.inf)
    return max(errors)
