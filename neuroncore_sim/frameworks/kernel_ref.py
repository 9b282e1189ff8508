"""Which code a backend config may run: the kernel it names, found without running anything
else.

A config names its kernel by module, qualified name and file (``FrameworkKernel.dump_config``).
:func:`load_kernel` takes it from a module already imported; a module not yet imported, or the
file, is imported only when its source declares that name as a kernel (a top-level function
decorated with ``nki.jit`` / ``nki.trace`` / ``nki.baremetal`` / ``nki.benchmark`` /
``nki.profile``, read with :mod:`ast`, not run), so a config naming ``antigravity`` or a script
runs none of it. What is found must then be a declared kernel (:func:`is_kernel`: one ``nki.jit``
and the others made, or one given to ``nki.FrameworkKernel``): ``os.system`` and any other
function is refused before it is called. The trust model is in docs/frameworks.md.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import weakref
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import KernelError, caller_loc, expected

#: The functions declared as NKI kernels in this process: the only ones a config may launch.
_KERNELS: "weakref.WeakSet[Any]" = weakref.WeakSet()
#: Decorators that declare a kernel (the last name of the decorator expression).
_DECORATORS = frozenset({"jit", "trace", "baremetal", "benchmark", "profile"})


def mark_kernel(func: Any) -> None:
    """Declare ``func`` an NKI kernel that a backend config may launch."""
    try:
        _KERNELS.add(func)
    except TypeError:  # not weak-referenceable (a builtin): never a kernel to launch
        return


def is_kernel(obj: Any) -> bool:
    """Whether ``obj`` (a function or an ``nki.jit`` kernel) was declared an NKI kernel."""
    for candidate in (obj, getattr(obj, "func", None)):
        try:
            if candidate is not None and candidate in _KERNELS:
                return True
        except TypeError:  # unhashable or not weak-referenceable
            continue
    return False


def declares_kernel(path: str | None, name: str) -> bool:
    """Whether the Python source at ``path`` defines ``name`` at top level as a function with a
    kernel decorator (the source is parsed, not run)."""
    if not path or not path.endswith(".py") or not Path(path).is_file():
        return False
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except (OSError, SyntaxError, ValueError, RecursionError):
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
               and any(_decorator_name(d) in _DECORATORS for d in node.decorator_list)
               for node in tree.body)


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def load_kernel(ref: Any) -> Any:
    """The kernel function a config's ``kernel`` entry names (see the module's docstring)."""
    if not isinstance(ref, dict) or not all(isinstance(ref.get(k), (str, type(None)))
                                            for k in ("module", "qualname", "file")):
        raise KernelError(expected("backend_config kernel", "an object with the strings "
                                   "module, qualname and file", repr(ref)[:80]),
                          loc=caller_loc())
    name, qualname = ref.get("module") or "", ref.get("qualname") or ""
    module = sys.modules.get(name) if name else None
    top = qualname.split(".")[0]
    if module is None and name not in ("", "__main__"):
        module = _import_declaring(name, top)
    obj = _attribute(module, qualname)
    if obj is None and declares_kernel(ref.get("file"), top):  # the module lacks it: its file
        spec = importlib.util.spec_from_file_location(
            f"_nki_custom_call_{abs(hash(ref['file']))}", ref["file"])
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            obj = _attribute(module, qualname)
    if not is_kernel(obj):  # refused before it is called: a config names code
        found = ("nothing (not imported: its source declares no such kernel)" if obj is None
                 else f"{type(obj).__name__} {getattr(obj, '__qualname__', obj)!r:.80}")
        raise KernelError(expected(
            f"backend_config: {name}.{qualname} ({ref.get('file')})",
            "an NKI kernel (a module-level function decorated with nki.jit / nki.trace / "
            "nki.baremetal, or given to nki.FrameworkKernel in this process)", found),
            loc=caller_loc())
    return getattr(obj, "func", obj)


def _attribute(module: ModuleType | None, qualname: str) -> Any:
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None) if obj is not None and part != "<locals>" else None
    return obj


def _import_declaring(name: str, top: str) -> ModuleType | None:
    """Module ``name``, imported only if its source declares ``top`` as a kernel."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not declares_kernel(spec.origin, top):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
