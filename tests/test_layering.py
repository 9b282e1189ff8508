"""Import direction and module size budget of the ``neuroncore_sim`` package.

The package is layered (design.md, style-study.md section 5.4). A module may import only from the
layers below its own, plus its own group where the table says so::

    L0 foundation    errors; config, dtypes (may import errors)
    L1 vocabulary    ir, ops, events (L0 only)
    L2 three columns front end (frontend/*), values (memory, semantics, execute),
                     time (cost, schedule, dma, timing): L0-L1 + their own column, never each other
    L3 assembly      result, analysis, tile_memory (L0-L1 + each other, pandas only inside
                     functions in result); simulate (L0-L2 + result)
    L4 presentation  report, plot, chrome_trace, progress (L0-L1 + result + each other)
    L5 entry points  cli, sweep, pytest_plugin, alias, __init__, __main__, nki/* (anything)

Third-party libraries stay in their corners: simpy in dma and timing, pandas at the edge,
matplotlib in plot and tqdm in progress (inside functions). The scan is a plain ``ast`` walk, so
it needs none of the package's dependencies and sees every import, including those inside
functions. Imports under
``if TYPE_CHECKING:`` count for the layering (a type dependency is still a dependency) but not as
run-time imports of a third-party library.

Every module file must appear in the table below; a new module fails this test until its author
places it in a layer.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "neuroncore_sim"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE
MAX_LINES = 500

# --- the layer table -------------------------------------------------------------------------

#: Module or folder inside the package (dotted, without "neuroncore_sim."; "__init__" is the
#: package itself) -> group. A module not named here takes the group of its innermost folder.
MODULE_GROUP: dict[str, str] = {
    "errors": "errors",
    "config": "config",
    "dtypes": "dtypes",
    "result": "result",
    "timing.analysis": "result",
    "timing.memory_use": "result",
    "timing.events": "vocabulary",
    "timing.tiles": "vocabulary",  # tile keys of block tensors: capacity, schedule, memory_use
    "simulate": "simulate",
    "cli": "entry",
    "pytest_plugin": "entry",
    "alias": "entry",
    "__init__": "entry",
    "__main__": "entry",
}

#: Subpackage (dotted) -> group of every module inside it (its __init__ included), unless
#: MODULE_GROUP names the module.
SUBPACKAGE_GROUP: dict[str, str] = {
    "program": "vocabulary",
    "frontend": "frontend",
    "values": "values",
    "timing": "time",
    "report": "presentation",
    "sweep": "entry",
    "nki": "entry",
}

_L0 = frozenset({"errors", "config", "dtypes"})
_L1 = _L0 | {"vocabulary"}
_L2 = _L1 | {"frontend", "values", "time"}

#: Group -> the groups its modules may import. Absent from its own set = no imports inside it.
ALLOWED: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "config": frozenset({"errors"}),
    "dtypes": frozenset({"errors"}),
    "vocabulary": _L0 | {"vocabulary"},  # ir re-exports opcodes
    "frontend": _L1 | {"frontend"},
    "values": _L1 | {"values"},
    "time": _L1 | {"time"},
    "result": _L1 | {"result"},
    "simulate": _L2 | {"result"},
    "presentation": _L1 | {"result", "presentation"},
    "entry": _L2 | {"result", "simulate", "presentation", "entry"},
}

#: Third-party distribution root -> (modules allowed to import it, modules that must import it
#: only inside functions). None means every module. Anything not listed here and not in the
#: standard library is refused: it would be an undeclared dependency.
THIRD_PARTY: dict[str, tuple[frozenset[str] | None, frozenset[str]]] = {
    "numpy": (None, frozenset()),
    "ml_dtypes": (None, frozenset()),
    "simpy": (frozenset({"timing.dma", "timing.engines"}), frozenset()),
    "pandas": (frozenset({"result", "report.tables", "sweep.run", "sweep.table", "cli",
                          "pytest_plugin"}),
               frozenset({"result", "sweep.table"})),
    "matplotlib": (frozenset({"report.plot", "sweep.plot"}),
                   frozenset({"report.plot", "sweep.plot"})),
    # progress bars are drawn at the edge only; the simulator calls plain hooks.
    "tqdm": (frozenset({"report.progress", "sweep.run"}), frozenset({"report.progress"})),
    # BLAS thread control for the GEMM threads of functional runs.
    "threadpoolctl": (frozenset({"values.fast.gemm_jobs"}), frozenset({"values.fast.gemm_jobs"})),
    # dask.distributed is an optional extra: imported only when a sweep asks for it.
    "dask": (frozenset({"sweep.run"}), frozenset({"sweep.run"})),
    "distributed": (frozenset({"sweep.run"}), frozenset({"sweep.run"})),
    # pytest is only a test extra: the plugin must not import it when the package is loaded.
    "pytest": (frozenset({"pytest_plugin"}), frozenset()),
    "_pytest": (frozenset({"pytest_plugin"}), frozenset()),
}


# --- scanning ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Import:
    """One import statement's target as seen in a module's source."""

    target: str  # absolute dotted name as written/resolved (before module lookup)
    names: tuple[str, ...]  # for `from X import a, b`: ("a", "b"); else ()
    line: int
    in_function: bool
    type_checking: bool


def module_name(path: Path, root: Path) -> str:
    """Dotted module name of a file under the package directory ``root``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve_relative(mod: str, is_package: bool, level: int, target: str | None) -> str:
    """Absolute name of ``from <level dots><target> import ...`` written in module ``mod``."""
    package = mod.split(".") if is_package else mod.split(".")[:-1]
    if level - 1 > len(package) - 1:
        raise ValueError(f"relative import goes above the top-level package in {mod}")
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def collect_imports(source: str, mod: str, is_package: bool) -> list[Import]:
    """Every import in ``source`` (module ``mod``), relative ones made absolute."""
    found: list[Import] = []

    def visit_children(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                # Only the body is exempt: the else-branch of `if TYPE_CHECKING:` runs.
                for stmt in child.body:
                    visit(stmt, in_function, True)
                for stmt in child.orelse:
                    visit(stmt, in_function, type_checking)
            else:
                visit(child, in_function, type_checking)

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(alias.name, (), node.lineno, in_function, type_checking))
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                target = _resolve_relative(mod, is_package, node.level, node.module)
            names = tuple(a.name for a in node.names)
            found.append(Import(target, names, node.lineno, in_function, type_checking))
        elif _is_dynamic_import(node):
            name = node.args[0].value  # type: ignore[attr-defined]
            found.append(Import(name, (), node.lineno, in_function, type_checking))
        scope = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        visit_children(node, in_function or scope, type_checking)

    visit_children(ast.parse(source), False, False)
    return found


def _is_dynamic_import(node: ast.AST) -> bool:
    """`importlib.import_module("x")` or `__import__("x")` with a constant name."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    if not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id in {"__import__", "import_module"}) or (
        isinstance(func, ast.Attribute) and func.attr == "import_module")


def group_of(mod: str) -> str | None:
    """Layer group of a dotted module name inside the package, or None if not in the table."""
    parts = mod.split(".")[1:]
    if not parts:
        return MODULE_GROUP.get("__init__")
    name = ".".join(parts)
    if name in MODULE_GROUP:
        return MODULE_GROUP[name]
    for i in range(len(parts), 0, -1):
        folder = ".".join(parts[:i])
        if folder in SUBPACKAGE_GROUP:
            return SUBPACKAGE_GROUP[folder]
    return None


def _internal_targets(imp: Import, modules: set[str]) -> list[str]:
    """The package modules an import loads. `from P import m` loads the submodule P.m when it
    exists, else P itself (m is then a name defined in P)."""
    if not imp.names:
        return [imp.target]
    subs = [f"{imp.target}.{n}" for n in imp.names if f"{imp.target}.{n}" in modules]
    if len(subs) < len(imp.names):
        subs.append(imp.target)
    return subs


def _short(mod: str) -> str:
    """Name of a module inside the package, for messages and the THIRD_PARTY table."""
    return mod.split(".", 1)[1] if "." in mod else "__init__"


def check_module(path: Path, root: Path, modules: set[str]) -> list[str]:
    """Layering, third-party and size violations of one module file."""
    rel = path.relative_to(root.parent).as_posix()
    mod = module_name(path, root)
    source = path.read_text(encoding="utf-8")
    problems: list[str] = []
    n_lines = len(source.splitlines())
    if n_lines > MAX_LINES:
        problems.append(f"{rel}: {n_lines} lines, over the {MAX_LINES}-line module budget; "
                        "split it by responsibility")
    group = group_of(mod)
    if group is None:
        return problems + [
            f"{rel}: module {mod} is not in the layer table; add it to MODULE_GROUP (or "
            "SUBPACKAGE_GROUP) in tests/test_layering.py, choosing its layer per design.md"]
    try:
        imports = collect_imports(source, mod, path.name == "__init__.py")
    except (SyntaxError, ValueError) as e:
        return problems + [f"{rel}: cannot scan imports: {e}"]
    for imp in imports:
        root_name = imp.target.split(".")[0]
        if root_name == PACKAGE:
            problems += _check_internal(rel, mod, group, imp, modules)
        else:
            problems += _check_external(rel, mod, root_name, imp)
    return problems


def _check_internal(rel: str, mod: str, group: str, imp: Import, modules: set[str]) -> list[str]:
    problems = []
    for target in _internal_targets(imp, modules):
        if target == mod:
            continue
        target_group = group_of(target)
        if target not in modules:
            problems.append(f"{rel}:{imp.line}: imports {target}, which does not exist")
        elif target_group is None:
            problems.append(f"{rel}:{imp.line}: imports {target}, which is not a module in the "
                            "layer table")
        elif target_group not in ALLOWED[group]:
            problems.append(f"{rel}:{imp.line}: {group} module {mod} may not import {target} "
                            f"({target_group}); allowed: {sorted(ALLOWED[group]) or 'nothing'}")
    return problems


def _check_external(rel: str, mod: str, root_name: str, imp: Import) -> list[str]:
    if root_name in sys.stdlib_module_names or root_name == "__future__":
        return []
    short = _short(mod)
    if root_name not in THIRD_PARTY:
        return [f"{rel}:{imp.line}: imports third-party {root_name!r}, which is not a declared "
                "dependency (add it to pyproject.toml and THIRD_PARTY in tests/test_layering.py)"]
    allowed_in, lazy_in = THIRD_PARTY[root_name]
    if allowed_in is not None and short not in allowed_in:
        return [f"{rel}:{imp.line}: {root_name} may only be imported by {sorted(allowed_in)}, "
                f"found in {short}"]
    if short in lazy_in and not (imp.in_function or imp.type_checking):
        return [f"{rel}:{imp.line}: {root_name} must be imported inside functions in {short} "
                "(so the package loads without it)"]
    return []


def check_tree(root: Path) -> list[str]:
    """All violations in the package directory ``root`` (e.g. .../neuroncore_sim)."""
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    modules = {module_name(p, root) for p in files}
    problems: list[str] = []
    for path in files:
        problems += check_module(path, root, modules)
    return problems


# --- tests: the real tree ----------------------------------------------------------------------

def test_package_follows_layering_and_size_budget() -> None:
    """The checked-in package breaks none of the rules."""
    assert PACKAGE_DIR.is_dir()
    problems = check_tree(PACKAGE_DIR)
    assert not problems, "layering violations:\n" + "\n".join(problems)


def test_table_is_consistent() -> None:
    """Every group used in the tables has an ALLOWED entry and allows only known groups."""
    groups = set(MODULE_GROUP.values()) | set(SUBPACKAGE_GROUP.values())
    assert groups == set(ALLOWED)
    for allowed in ALLOWED.values():
        assert allowed <= groups


# --- tests: the checker can fail --------------------------------------------------------------

#: Modules of the synthetic trees besides those MODULE_GROUP names (one or more per folder).
_SAMPLE_MODULES = ("program.ir", "program.ops", "frontend.tracer", "values.memory",
                   "values.semantics", "values.execute", "timing.engines", "timing.dma",
                   "timing.cost", "report.tables", "report.plot", "report.progress", "sweep.run")


def _make_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A synthetic package with every module of the table (empty) plus ``files``
    (relative path -> source, replacing the empty module of that name)."""
    root = tmp_path / PACKAGE
    base = {f"{name.replace('.', '/')}.py": "" for name in (*MODULE_GROUP, *_SAMPLE_MODULES)}
    base.update({f"{sub.replace('.', '/')}/__init__.py": "" for sub in SUBPACKAGE_GROUP})
    for rel, src in {**base, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(src))
    return root


def test_synthetic_clean_tree_passes(tmp_path: Path) -> None:
    """A tree obeying every rule, with all kinds of relative imports, has no violations."""
    root = _make_tree(tmp_path, {
        "program/ir.py": "from ..errors import KernelError\nfrom ..dtypes import float32\n",
        "frontend/__init__.py": "from .tracer import trace\n",
        "frontend/tracer.py": "from ..program import ir\nfrom ..errors import KernelError\n",
        "frontend/lang.py": "from . import tracer\nfrom neuroncore_sim.frontend import tracer\n",
        "values/execute.py": "from . import memory\nfrom ..program.ir import Program\n",
        "values/memory.py": "import numpy as np\n",
        "timing/engines.py": "import simpy\nfrom .dma import x\nfrom . import events\n",
        "timing/dma.py": "from simpy import Resource\n",
        "result.py": "from .timing import analysis\ndef f():\n    import pandas\n",
        "simulate.py": "from .frontend import tracer\nfrom .values import execute\n"
                       "from .timing import engines\nfrom . import result\n",
        "report/plot.py": "from ..result import R\ndef f():\n    import matplotlib.pyplot\n",
        "nki/__init__.py": "from . import language\nfrom .. import simulate\n",
        "nki/language.py": "from ..frontend.lang import *\n",
        "__main__.py": "from .cli import main\n",
        "cli.py": "import pandas\nimport neuroncore_sim\nfrom .sweep import run\n",
        "sweep/run.py": "import pandas\n",
    })
    assert check_tree(root) == []


@pytest.mark.parametrize("rel, src, expect", [
    # lower layer importing a higher one
    ("program/ir.py", "from .. import simulate\n",
     "vocabulary module neuroncore_sim.program.ir may not import"),
    ("errors.py", "from .config import X\n", "may not import neuroncore_sim.config"),
    ("config.py", "from . import dtypes\n", "may not import neuroncore_sim.dtypes"),
    ("program/ir.py", "from ..values.memory import Memory\n",
     "may not import neuroncore_sim.values.memory"),
    ("timing/events.py", "from ..timing import engines\n",
     "may not import neuroncore_sim.timing.engines"),
    # the three L2 columns never import each other
    ("values/execute.py", "from ..timing.engines import run\n",
     "values module neuroncore_sim.values.execute"),
    ("timing/engines.py", "from neuroncore_sim.values import memory\n",
     "may not import neuroncore_sim.values.memory"),
    ("frontend/tracer.py", "from ..values.semantics import S\n",
     "may not import neuroncore_sim.values.sema"),
    ("timing/cost.py", "from ..frontend import tracer\n", "may not import neuroncore_sim.frontend"),
    # front end must not reach up into its user-facing re-export
    ("frontend/tracer.py", "from ..nki import language\n", "may not import neuroncore_sim.nki"),
    # importing the package root means importing its __init__ (an entry point)
    ("values/memory.py", "import neuroncore_sim\n", "may not import neuroncore_sim (entry)"),
    ("values/memory.py", "from .. import undefined_name\n",
     "may not import neuroncore_sim (entry)"),
    # assembly and presentation limits
    ("result.py", "from .simulate import simulate\n", "may not import neuroncore_sim.simulate"),
    ("report/tables.py", "from ..timing.engines import run\n",
     "may not import neuroncore_sim.timing.engines"),
    ("simulate.py", "from .report import tables\n", "may not import neuroncore_sim.report.tables"),
    # the import hidden inside a function still counts
    ("values/semantics.py", "def f():\n    from .. import cli\n",
     "may not import neuroncore_sim.cli"),
    ("values/semantics.py", "import importlib\nimportlib.import_module('neuroncore_sim.cli')\n",
     "may not import neuroncore_sim.cli"),
    # third-party corners
    ("timing/cost.py", "import simpy\n", "simpy may only be imported by"),
    ("values/memory.py", "import pandas as pd\n", "pandas may only be imported by"),
    ("result.py", "import pandas as pd\n", "pandas must be imported inside functions"),
    ("report/plot.py", "import matplotlib.pyplot as plt\n", "matplotlib must be imported inside"),
    ("report/tables.py", "def f():\n    import matplotlib\n", "matplotlib may only be imported by"),
    ("timing/engines.py", "def f():\n    from tqdm import tqdm\n", "tqdm may only be imported by"),
    ("report/progress.py", "import tqdm\n", "tqdm must be imported inside functions"),
    ("program/ir.py", "import scipy\n", "not a declared dependency"),
    # unknown modules and broken internal imports
    ("helpers.py", "", "not in the layer table"),
    ("extra/thing.py", "", "not in the layer table"),
    ("cli.py", "from .nothere import x\n", "imports neuroncore_sim.nothere, which does not"),
])
def test_synthetic_violation_is_reported(tmp_path: Path, rel: str, src: str, expect: str) -> None:
    """Each kind of violation in a synthetic tree is reported with a clear message."""
    root = _make_tree(tmp_path, {rel: src})
    problems = check_tree(root)
    assert any(expect in p for p in problems), problems
    # The message names the offending file, so the author knows where to look.
    assert all(p.startswith("neuroncore_sim/") for p in problems)


def test_type_checking_import_is_not_a_runtime_import(tmp_path: Path) -> None:
    """pandas under `if TYPE_CHECKING:` in result.py is fine; its else-branch is not exempt."""
    ok = _make_tree(tmp_path / "a", {"result.py": """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import pandas as pd
        """})
    assert check_tree(ok) == []
    bad = _make_tree(tmp_path / "b", {"result.py": """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            pass
        else:
            import pandas as pd
        """})
    assert any("inside functions" in p for p in check_tree(bad))


def test_size_budget(tmp_path: Path) -> None:
    """A module over the line budget is reported; one at the budget is not."""
    root = _make_tree(tmp_path, {"program/ir.py": "x = 1\n" * MAX_LINES,
                                 "program/ops.py": "x = 1\n" * (MAX_LINES + 1)})
    problems = check_tree(root)
    assert problems == [f"neuroncore_sim/program/ops.py: {MAX_LINES + 1} lines, over the "
                        f"{MAX_LINES}-line module budget; split it by responsibility"]


def test_relative_import_resolution() -> None:
    """Relative imports resolve against the module's package (its own name for __init__)."""
    r = _resolve_relative
    assert r("neuroncore_sim.config", False, 1, "errors") == "neuroncore_sim.errors"
    assert r("neuroncore_sim.config", False, 1, None) == "neuroncore_sim"
    assert r("neuroncore_sim.frontend.tracer", False, 2, "dtypes") == "neuroncore_sim.dtypes"
    assert r("neuroncore_sim.values.fast.pipeline", False, 3, "program") == \
        "neuroncore_sim.program"
    assert r("neuroncore_sim.frontend.tracer", False, 1, None) == "neuroncore_sim.frontend"
    assert r("neuroncore_sim.nki", True, 1, "language") == "neuroncore_sim.nki.language"
    assert r("neuroncore_sim.nki", True, 2, "frontend") == "neuroncore_sim.frontend"
    assert r("neuroncore_sim", True, 1, "errors") == "neuroncore_sim.errors"
    with pytest.raises(ValueError):
        r("neuroncore_sim.program.ir", False, 3, "x")
