"""Kernel files: the ``kernels/*.py`` convention shared by ``neuroncore-sim profile`` and sweeps.

A kernel file defines one or more ``@nki.jit`` kernels (``kernel``, or a module-level ``KERNELS``
dict naming several), ``example_inputs(**shape_params)`` returning the kernel's inputs (a dict of
numpy arrays, or a sequence of positional ones) and optionally ``reference(*inputs,
**kernel_params)``, the numpy result to compare against, and ``GRID``, the SPMD launch grid.

A target names a kernel in a file as ``"path/file.py::kernel"``, or ``"path/file.py"`` for the
file's default kernel (``kernel``, or the only entry of ``KERNELS``).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..alias import install_neuronxcc_alias
from ..errors import SimulatorError, expected


class UsageError(SimulatorError):
    """A kernel file or kernel name given on the command line or to the API does not exist,
    or the file given is not a kernel file (a script, a data file)."""


class KernelFileError(SimulatorError):
    """A kernel file that cannot be loaded: a syntax error, or an exception while importing
    it, or an ``example_inputs`` / ``KERNELS`` that does not follow the convention."""


#: What a kernel file is, for messages.
KERNEL_FILE = ("a kernel file (an example_inputs() returning the kernel's inputs, and a `kernel` "
               "function or a KERNELS table, as in kernels/*.py)")


def load_kernel_file(path: Path) -> Any:
    """Import a kernel file by path (a fresh module each call) with the ``neuronxcc`` alias on.

    The file is read before it runs: one that defines no ``example_inputs`` is not a kernel
    file (a script, say) and is refused without running it.

    Raises:
        UsageError: no such file, not a ``.py`` file, or not a kernel file.
        KernelFileError: a syntax error, or the file raised while being imported.
    """
    if path.is_dir() or (path.exists() and path.suffix != ".py"):
        kind = "a directory" if path.is_dir() else f"a {path.suffix or 'suffix-less'} file"
        raise UsageError(f"{path}: expected {KERNEL_FILE}, found {kind}")
    if not path.is_file() or path.suffix != ".py":
        raise UsageError(f"kernel file not found (expected FILE.py): {path}")
    _expect_kernel_file(path)
    install_neuronxcc_alias()  # kernel files written for the real NKI import neuronxcc
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # sample kernels import their siblings
    name = re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py file always has a loader
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SystemExit as e:  # a script that ends itself when imported
        raise UsageError(f"{path}: expected {KERNEL_FILE}, found a script: importing it called "
                         f"sys.exit({e.code!r}); time the kernel launches of a script with "
                         f"`neuroncore-sim run {path}`") from None
    except SimulatorError:
        raise
    except Exception as e:  # the file's own bug: say where in it (the traceback with --debug)
        raise KernelFileError(f"importing the kernel file {path.name} raised "
                              f"{type(e).__name__}: {e}", _innermost_line(e, path)) from e
    return module


def _expect_kernel_file(path: Path) -> None:
    """Refuse, before running it, a Python file that binds no ``example_inputs`` at top level
    (a script, a library module): every kernel file has one."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as e:
        raise KernelFileError(f"cannot read the kernel file: {e.msg}",
                              f"{path.name}:{e.lineno or 1}") from None
    names, star = _top_level_names(tree.body)
    if star or "example_inputs" in names:
        return
    kernels = [n for n in ("kernel", "KERNELS") if n in names]
    functions = [s.name for s in tree.body if isinstance(s, ast.FunctionDef)]
    found = (f"{' and '.join(kernels)} but no example_inputs()" if kernels else
             "no example_inputs(), kernel or KERNELS"
             + (f" (its functions: {', '.join(functions[:6])})" if functions else ""))
    hint = ("add an example_inputs(**shape) returning the kernel's inputs (a dict of numpy "
            "arrays by parameter name)" if kernels else
            f"to time the kernel launches of a script, use `neuroncore-sim run {path}`")
    raise UsageError(f"{path}: expected {KERNEL_FILE}, found {found}; {hint}")


def _top_level_names(body: list[ast.stmt]) -> tuple[set[str], bool]:
    """Names bound by module-level statements (also inside top-level if/try/with/for), and
    whether a ``from x import *`` may bind more."""
    names: set[str] = set()
    star = False
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                star |= alias.name == "*"
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        else:  # if / try / with / for at module level: the names their bodies bind
            blocks = [getattr(node, f, []) for f in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(node, "handlers", [])]
            for block in blocks:
                inner, inner_star = _top_level_names(block)
                names |= inner
                star |= inner_star
    return names, star


def _innermost_line(error: BaseException, path: Path) -> str:
    """``file.py:LINE`` of the innermost traceback frame in ``path`` (its first line if none)."""
    found, target = 1, str(path.resolve())
    tb = error.__traceback__
    while tb is not None:
        if str(Path(tb.tb_frame.f_code.co_filename).resolve()) == target:
            found = tb.tb_lineno
        tb = tb.tb_next
    if isinstance(error, SyntaxError) and error.filename and \
            str(Path(error.filename).resolve()) == target:
        found = error.lineno or found
    return f"{path.name}:{found}"


def find_kernel(module: Any, name: str | None) -> tuple[str, Any]:
    """The kernel called ``name`` in a loaded kernel file (``None``: its default kernel)."""
    table = getattr(module, "KERNELS", {}) or {}
    if not isinstance(table, dict):
        raise KernelFileError(f"{module.__file__}: KERNELS; expected a dict of name -> kernel, "
                              f"found {type(table).__name__}")
    kernels = dict(table)
    if name is None:
        if hasattr(module, "kernel"):
            return "kernel", _callable(module, "kernel", module.kernel)
        if len(kernels) == 1:
            only, fn = next(iter(kernels.items()))
            return only, _callable(module, f"KERNELS[{only!r}]", fn)
        if not kernels:  # a script, say: `neuroncore-sim run` is what times those
            raise UsageError(f"{module.__file__}: expected a kernel file (a `kernel` function "
                             "or a KERNELS table, and example_inputs()), found neither; name "
                             "one as FILE.py::KERNEL, or time a script with "
                             "`neuroncore-sim run`")
        raise UsageError(f"{module.__file__}: name the kernel as FILE.py::KERNEL; "
                         f"choices: {', '.join(kernels)}")
    if name in kernels:
        return name, _callable(module, f"KERNELS[{name!r}]", kernels[name])
    fn = getattr(module, name, None)
    if fn is not None and not isinstance(fn, type(sys)):
        return name, _callable(module, name, fn)
    raise UsageError(f"{module.__file__} has no kernel {name!r}"
                     + (f"; choices: {', '.join(kernels)}" if kernels else ""))


def _callable(module: Any, what: str, fn: Any) -> Any:
    """``fn`` when it can be launched as a kernel (a function or an nki.jit kernel)."""
    if not callable(getattr(fn, "func", fn)) or isinstance(fn, type):
        raise KernelFileError(f"{module.__file__}: {what}; expected an NKI kernel (a function "
                              f"or an nki.jit kernel), found {type(fn).__name__} {fn!r:.60}")
    return fn


def split_target(target: str) -> tuple[Path, str | None]:
    """``"file.py::kernel"`` -> (path, "kernel"); ``"file.py"`` -> (path, None)."""
    file, _, name = str(target).partition("::")
    if not file.strip():
        raise UsageError(f"expected FILE.py[::KERNEL] (a kernel file, then its kernel), found "
                         f"{str(target)!r}")
    return Path(file), (name or None)


def example_inputs(module: Any, file: object, **shape_params: Any) -> tuple[tuple, dict]:
    """Call the file's ``example_inputs(**shape_params)``; returns (positional, keyword) args."""
    make = getattr(module, "example_inputs", None)
    if not callable(make):
        raise UsageError(f"{file} has no example_inputs() to take the kernel's inputs from")
    required = [p.name for p in inspect.signature(make).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and p.name not in shape_params]
    if required:
        raise KernelFileError(expected(
            f"{file}: example_inputs", "defaults for all its parameters (they make the "
            "inputs of `profile` and the fixed values of a sweep)",
            f"no default for {', '.join(required)}"))
    try:
        inputs = make(**shape_params)
    except SimulatorError:
        raise
    except Exception as e:  # the file's own bug: say where in it (the traceback with --debug)
        path = Path(getattr(module, "__file__", None) or str(file))
        raise KernelFileError(f"example_inputs({_call_text(shape_params)}) of {path.name} "
                              f"raised {type(e).__name__}: {e}", _innermost_line(e, path)) from e
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (list, tuple)):
        return tuple(inputs), {}
    raise KernelFileError(expected(
        f"{file}: example_inputs()", "a dict of the kernel's inputs by parameter name (or a "
        "list/tuple of positional ones)", f"{type(inputs).__name__} {inputs!r:.60}"))


def _call_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


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
