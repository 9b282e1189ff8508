"""The SDK's deeper module paths that real kernels import, for the ``neuronxcc`` alias.

Kernels written inside AWS import names from where the SDK keeps them, not only from
``neuronxcc.nki.language`` / ``.isa``:

- ``neuronxcc.nki.language.constants`` (``sizeinbytes``), ``neuronxcc.nki.isa.constants``
  (``oob_mode``, ``dge_mode``, ``engine``, ``reduce_cmd``, ``nc_version``),
  ``neuronxcc.nki.isa.neuron_isa`` (the instructions) and ``neuronxcc.nki.language.iterators``
  (the loop iterators): the same objects as the public modules.
- ``neuronxcc.nki.nccl`` (collectives between NeuronCores) and the SDK's private modules
  (``neuronxcc.nki._private...``, ``neuronxcc.nki._private_kernels...``): importing them works,
  so a module whose other kernels are plain NKI loads; *using* one of their names is an
  :class:`UnsupportedError` at the kernel line: one NeuronCore-v2 is simulated, and private
  APIs have no public reference to follow.
- ``neuronxcc.nki.docs.examples.<folder>.<module>``: the SDK ships its documentation's example
  kernels inside the package, and its example scripts import them from there
  (``layernorm_torch.py``). They are AWS's code, not part of this package: the name resolves to
  ``<folder>/<module>.py`` of a checkout of those examples on the import path (the script's
  folder or its parent, as when the script is run from the checkout), else a
  ``ModuleNotFoundError`` saying where it was looked for.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ..dtypes import to_dtype
from ..errors import UnsupportedError, caller_loc


def sizeinbytes(dtype: Any) -> int:
    """Bytes of one element of ``dtype`` (numpy dtypes and the ``nl`` dtypes: bfloat16, fp8)."""
    return int(np.dtype(to_dtype(dtype, "sizeinbytes dtype")).itemsize)


@contextmanager
def sync_program(program_axes: Any = ()) -> Iterator[None]:
    """``with sync_program(axes):`` run the block once for the programs along ``axes``. With no
    axes it is the block itself; synchronising SPMD programs is not simulated (each program runs
    alone, one after another)."""
    axes = tuple(program_axes) if isinstance(program_axes, (tuple, list)) else (program_axes,)
    if any(a is not None for a in axes):
        raise UnsupportedError(f"sync_program: expected no program axes (SPMD programs run one "
                               f"after another here, never synchronised), found {program_axes!r}",
                               caller_loc())
    yield


class _Unavailable(types.ModuleType):
    """A module whose names exist only to fail clearly when used."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(name, f"{name}: {why}")
        self.__path__: list[str] = []  # a package: its submodules import too
        self._why = why

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _UnavailableName(f"{self.__name__}.{attr}", self._why)


class _UnavailableName:
    """A name of an unavailable module: calling it (or reading its attributes) is an error."""

    def __init__(self, name: str, why: str) -> None:
        self._name, self._why = name, why

    def _fail(self) -> UnsupportedError:
        return UnsupportedError(f"{self._name}: {self._why}", caller_loc())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._fail()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise self._fail()

    def __repr__(self) -> str:
        return f"<unavailable {self._name}>"


_NCCL = ("collective communication between NeuronCores is not simulated; expected a kernel for "
         "one NeuronCore-v2, found a collective (needs several cores / trn2)")
_PRIVATE = ("a private Neuron SDK API with no public NKI reference; expected the documented "
            "nki.language / nki.isa surface, found a private name")


def modules(language: types.ModuleType, isa: types.ModuleType) -> dict[str, types.ModuleType]:
    """The submodules to register under ``prefix`` (``"language.constants"`` -> module)."""
    lang_constants = types.ModuleType("nki.language.constants", "nki.language constants")
    lang_constants.sizeinbytes = sizeinbytes  # type: ignore[attr-defined]
    lang_constants.tile_size = language.tile_size  # type: ignore[attr-defined]
    iterators = types.ModuleType("nki.language.iterators", "nki.language loop iterators")
    for name in ("affine_range", "sequential_range", "static_range"):
        setattr(iterators, name, getattr(language, name))
    iterators.sync_program = sync_program  # type: ignore[attr-defined]
    isa_constants = types.ModuleType("nki.isa.constants", "nki.isa enumerations")
    for name in ("oob_mode", "dge_mode", "engine", "reduce_cmd", "nc_version"):
        setattr(isa_constants, name, getattr(isa, name))
    nccl = _Unavailable("nki.nccl", _NCCL)
    return {
        "language.constants": lang_constants, "language.iterators": iterators,
        "isa.constants": isa_constants, "isa.neuron_isa": isa,
        "nccl": nccl, "nccl.collectives": _Unavailable("nki.nccl.collectives", _NCCL),
        "_private": _Unavailable("nki._private", _PRIVATE),
        "_private.private_api": _Unavailable("nki._private.private_api", _PRIVATE),
        "_private_kernels": _Unavailable("nki._private_kernels", _PRIVATE),
    }


#: Submodule prefixes (under the alias roots) whose every module is unavailable, and why
#: (``compiler.backends``: the compiler's internals, ``local_tile``, ``TileIndex``, which AWS's
#: reference kernels' helpers import).
_UNAVAILABLE_TREES = {"nccl": _NCCL, "_private": _PRIVATE, "_private_kernels": _PRIVATE,
                      "compiler.backends": _PRIVATE}


class UnavailableFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports any deeper module of the unavailable trees (``neuronxcc.nki._private_kernels.X``)
    as an :class:`_Unavailable` module, under the roots the alias registered."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots

    def _why(self, fullname: str) -> str | None:
        for root in self.roots:
            if fullname.startswith(root + "."):
                rest = fullname[len(root) + 1:]
                for tree, why in _UNAVAILABLE_TREES.items():
                    if rest == tree or rest.startswith(tree + "."):
                        return why
        return None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        examples = self._examples_path(fullname)
        if examples is not None:
            return _examples_spec(fullname, examples, self)
        if self._why(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def _examples_path(self, fullname: str) -> list[str] | None:
        """The parts after ``<root>.docs`` of a name under it (``["examples", "layernorm",
        ...]``), else None."""
        for root in self.roots:
            head = root + ".docs"
            if fullname == head:
                return []
            if fullname.startswith(head + "."):
                return fullname[len(head) + 1:].split(".")
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        if spec.loader_state == "namespace":
            return types.ModuleType(spec.name, "A folder of the Neuron SDK's bundled examples")
        return _Unavailable(spec.name, self._why(spec.name) or _PRIVATE)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install_finder(roots: tuple[str, ...]) -> None:
    """Add (once) the finder of the unavailable trees under ``roots``."""
    for finder in sys.meta_path:
        if isinstance(finder, UnavailableFinder):
            finder.roots = tuple(dict.fromkeys(finder.roots + roots))
            return
    sys.meta_path.append(UnavailableFinder(roots))


def _examples_spec(fullname: str, parts: list[str], loader: Any) -> Any:
    """The spec of ``<root>.docs[.examples[.<folder>...][.<module>]]``: folders are empty
    packages, a module is the matching file of an examples checkout on ``sys.path`` (see the
    module doc); None for other names under ``docs``."""
    def folder() -> Any:
        spec = importlib.machinery.ModuleSpec(fullname, loader, is_package=True)
        spec.loader_state = "namespace"
        return spec
    if parts[:1] not in ([], ["examples"]):
        return None
    rel = parts[1:]
    if not rel:
        return folder()
    found = _find_example(rel, folder=False)
    if found is not None:
        return importlib.util.spec_from_file_location(fullname, found)
    if len(rel) == 1 or _find_example(rel, folder=True):
        # (a first-level name not found is taken as a folder: the import of the module under
        # it then names the whole path it looked for)
        return folder()
    raise ModuleNotFoundError(
        f"No module named {fullname!r}: the Neuron SDK's bundled example kernels are AWS's code, "
        f"not part of neuroncore_sim; expected {os.path.join(*rel)}.py in a checkout of those "
        f"examples on the import path (the script's folder or its parent), found none",
        name=fullname)


def _find_example(parts: list[str], folder: bool) -> str | bool | None:
    """``parts`` joined as a folder (folder=True: whether one exists) or a ``.py`` file (its
    path, or None) under an entry of ``sys.path`` or the entry's parent."""
    rel = os.path.join(*parts)
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        base = os.path.abspath(entry or ".")
        for root in (base, os.path.dirname(base)):
            candidate = os.path.join(root, rel)
            if folder and os.path.isdir(candidate):
                return True
            if not folder and os.path.isfile(candidate + ".py"):
                return candidate + ".py"
    return False if folder else None
