"""Import direction, import cycles and module size budget of the ``neuroncore_sim`` package.

The package is laid out by stage (design.md, docs/architecture.md), and a module's layer is the
layer of its folder (top-level modules are named in LAYER_OF_MODULE)::

    0 foundation     errors.py, config.py, compile_options.py, dtypes.py
    1 program        program/  (the recorded Program: ir, opcodes, ops, layout)
    2 stages         frontend/, values/  (two columns that never import each other)
    3 compiler       compiler/  (what neuronx-cc makes of the Program: the compiled streams)
    4 timing         timing/  (the hardware running the compiled streams)
    5 assembly       result.py, simulate.py, environment.py, error_band.py
    6 presentation   report/
    7 entry points   nki/, sweep/, cli/, pytest_plugin.py, alias.py, __init__.py, __main__.py

A module may import any module of a lower layer and any module of its own folder. Top-level
modules of one layer may import each other (foundation, assembly, entry points); so may the
folders of the entry layer. Nothing else: no upward import, and no import between the two
stage columns (the front end records, values computes; the compiler and the timing model read
the Program, never the front end's objects or numpy values). On top of that, the import graph has no cycles, except the one named edge of
ALLOWED_CYCLE_EDGE (its reason is written there) and, while they are being broken, the cycles
listed in CYCLES_TO_BREAK: a new cycle fails, and so does a listed one that no longer exists
(take it off the list).

Third-party libraries stay in their corners: simpy in timing.dma and timing.engines, pandas at
the edge, matplotlib in the plots and tqdm in the progress bars (inside functions). The scan is a
plain ``ast`` walk, so it needs none of the package's dependencies and sees every import,
including those inside functions. Imports under ``if TYPE_CHECKING:`` count for the layering (a
type dependency is still a dependency) but neither as run-time imports of a third-party library
nor as edges of an import cycle.
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

# --- the layers ------------------------------------------------------------------------------

LAYER_NAMES = ("foundation", "program", "stages", "compiler", "timing", "assembly", "presentation",
               "entry points")

#: Top-level folder of the package -> its layer (every module inside it, at any depth).
LAYER_OF_FOLDER: dict[str, int] = {
    "program": 1,
    "frontend": 2,
    "values": 2,
    "compiler": 3,
    "timing": 4,
    "report": 6,
    "sweep": 7,  # a user-facing API like the command line: it loads kernel files (alias) too
    # emit / measure / fit the microbenchmark suite: runs launches like sweep/, loads case files
    "calibrate": 7,
    "nki": 7,
    # NKI kernels in framework programs (JAX, PyTorch): an entry point, it runs launches.
    "frameworks": 7,
    "cli": 7,  # the command line, one module per command beside the parser
}

#: Top-level module ("__init__" is the package itself) -> its layer.
LAYER_OF_MODULE: dict[str, int] = {
    "errors": 0,
    "config": 0,
    "compile_options": 0,
    "dtypes": 0,
    "result": 5,
    "error_band": 5,
    "simulate": 5,
    "environment": 5,
    "launch_outputs": 5,
    "launches": 5,
    "pytest_plugin": 7,
    "alias": 7,
    "__init__": 7,
    "__main__": 7,
}

#: Stage folders that may not import some lower stage folders: the compiler and the timing model
#: read the recorded Program only, never the front end's objects or the values stage's numpy.
STAGE_WALLS: dict[str, frozenset[str]] = {
    "compiler": frozenset({"frontend", "values"}),
    "timing": frozenset({"frontend", "values"}),
}

#: Layers whose separate units (top-level modules, folders) may import each other.
OPEN_LAYERS = frozenset({0, 5, 7})

#: The one import edge allowed to close a cycle, and why.
ALLOWED_CYCLE_EDGE = ("frontend.tensors.tensor", "frontend.language")
ALLOWED_CYCLE_REASON = ("operators on tiles (t + u, t * 2, ...) are nl calls: tensor.py forwards "
                        "them to nl, which itself takes tiles; so are assignments (t[...] = x, "
                        "t += x) and the views only DMAs and instructions take (t[idx_tile], "
                        "runtime offsets)")

#: Import cycles known to exist while they are being broken, each the set of modules (without
#: "neuroncore_sim.") of one strongly connected component. Empty: issue 13 broke the last one,
#: the front end's (alloc.py, the isa/ package, views below tensor.py, index_expr.py).
CYCLES_TO_BREAK: frozenset[frozenset[str]] = frozenset()

#: The modules that may import a framework (jax, torch, kernels), inside functions only.
FRAMEWORK_MODULES = frozenset({"frameworks.jax_ops", "frameworks.profile",
                               "frameworks.torch_layers", "frameworks.layers",
                               "frameworks.device_alias"})

#: Third-party distribution root -> (modules allowed to import it, modules that must import it
#: only inside functions). None means every module. Anything not listed here and not in the
#: standard library is refused: it would be an undeclared dependency.
THIRD_PARTY: dict[str, tuple[frozenset[str] | None, frozenset[str]]] = {
    "numpy": (None, frozenset()),
    "ml_dtypes": (None, frozenset()),
    "simpy": (frozenset({"timing.dma", "timing.engines"}), frozenset()),
    "pandas": (frozenset({"result", "report.tables", "report.explorer", "report.comparison",
                          "sweep.run",
                          "sweep.table", "cli", "pytest_plugin"}),
               frozenset({"result", "sweep.table", "report.explorer"})),
    # Parquet tables of report.explorer: an optional dependency, imported when they are written.
    "pyarrow": (frozenset({"report.explorer"}), frozenset({"report.explorer"})),
    "matplotlib": (frozenset({"report.plot", "sweep.plot"}),
                   frozenset({"report.plot", "sweep.plot"})),
    # progress bars are drawn at the edge only; the simulator calls plain hooks.
    "tqdm": (frozenset({"report.progress", "sweep.run"}), frozenset({"report.progress"})),
    # BLAS thread control for the GEMM threads of functional runs.
    "threadpoolctl": (frozenset({"values.fast.gemm_jobs"}), frozenset({"values.fast.gemm_jobs"})),
    # dask.distributed is an optional extra: imported only when a sweep asks for it.
    "dask": (frozenset({"sweep.run"}), frozenset({"sweep.run"})),
    "distributed": (frozenset({"sweep.run", "sweep.dask_connect"}),
                    frozenset({"sweep.run", "sweep.dask_connect"})),
    # Frameworks are optional: only the frameworks/ modules import them, inside functions,
    # when the user's program already uses them.
    "jax": (FRAMEWORK_MODULES, FRAMEWORK_MODULES),
    "torch": (FRAMEWORK_MODULES, FRAMEWORK_MODULES),
    "kernels": (FRAMEWORK_MODULES, FRAMEWORK_MODULES),
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


def unit_of(mod: str) -> str:
    """The folder (top-level) a module is in, or the top-level module's own name."""
    parts = mod.split(".")[1:]
    return parts[0] if parts else "__init__"


def layer_of(mod: str) -> int | None:
    """Layer of a dotted module name inside the package, or None if it has no layer."""
    parts = mod.split(".")[1:]
    if len(parts) > 1 or (parts and parts[0] in LAYER_OF_FOLDER):
        return LAYER_OF_FOLDER.get(parts[0])
    return LAYER_OF_MODULE.get(parts[0] if parts else "__init__")


def may_import(mod: str, target: str) -> bool:
    """Whether module ``mod`` may import ``target`` (both laid out, dotted, in the package)."""
    own, their = layer_of(mod), layer_of(target)
    assert own is not None and their is not None
    if unit_of(target) in STAGE_WALLS.get(unit_of(mod), ()):
        return False
    if their < own or unit_of(mod) == unit_of(target):
        return True
    return their == own and own in OPEN_LAYERS


def _describe(mod: str) -> str:
    layer = layer_of(mod)
    return f"{LAYER_NAMES[layer]}, layer {layer}" if layer is not None else "no layer"


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
    if layer_of(mod) is None:
        return problems + [
            f"{rel}: module {mod} has no layer; put it in a stage folder, or add it to "
            "LAYER_OF_MODULE / LAYER_OF_FOLDER in tests/test_layering.py (see design.md)"]
    try:
        imports = collect_imports(source, mod, path.name == "__init__.py")
    except (SyntaxError, ValueError) as e:
        return problems + [f"{rel}: cannot scan imports: {e}"]
    for imp in imports:
        root_name = imp.target.split(".")[0]
        if root_name == PACKAGE:
            problems += _check_internal(rel, mod, imp, modules)
        else:
            problems += _check_external(rel, mod, root_name, imp)
    return problems


def _check_internal(rel: str, mod: str, imp: Import, modules: set[str]) -> list[str]:
    problems = []
    for target in _internal_targets(imp, modules):
        if target == mod:
            continue
        if target not in modules:
            problems.append(f"{rel}:{imp.line}: imports {target}, which does not exist")
        elif layer_of(target) is None:
            problems.append(f"{rel}:{imp.line}: imports {target}, which has no layer")
        elif not may_import(mod, target):
            problems.append(f"{rel}:{imp.line}: {mod} ({_describe(mod)}) may not import "
                            f"{target} ({_describe(target)})")
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


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package modules it imports at run time (TYPE_CHECKING imports left out)."""
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    modules = {module_name(p, root) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        mod = module_name(path, root)
        graph[mod] = set()
        try:
            imports = collect_imports(path.read_text(encoding="utf-8"), mod,
                                      path.name == "__init__.py")
        except (SyntaxError, ValueError):
            continue  # reported by check_module
        for imp in imports:
            if imp.type_checking or imp.target.split(".")[0] != PACKAGE:
                continue
            graph[mod].update(t for t in _internal_targets(imp, modules)
                              if t != mod and t in modules)
    return graph


def import_cycles(graph: dict[str, set[str]],
                  allowed_edge: tuple[str, str] | None = None) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), with the
    allowed edge (short names) left out of the graph."""
    skip = tuple(f"{PACKAGE}.{m}" for m in allowed_edge) if allowed_edge else None
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if (node, child) == skip:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.add(frozenset(component))
    return found


def _short_set(component: frozenset[str]) -> frozenset[str]:
    return frozenset(_short(m) for m in component)


def cycle_problems(root: Path) -> list[str]:
    """Import cycles that are neither the allowed edge nor listed in CYCLES_TO_BREAK, and listed
    cycles that are gone."""
    cycles = {_short_set(c) for c in import_cycles(import_graph(root), ALLOWED_CYCLE_EDGE)}
    problems = [f"{PACKAGE}/: import cycle among {sorted(c)}; break it (an allocation or facade "
                "module below both sides usually does)"
                for c in sorted(cycles - CYCLES_TO_BREAK, key=sorted)]
    problems += [f"{PACKAGE}/: the cycle {sorted(c)} of CYCLES_TO_BREAK is gone; take it off "
                 "the list" for c in sorted(CYCLES_TO_BREAK - cycles, key=sorted)]
    return problems


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


def test_no_import_cycles() -> None:
    """No import cycle but the allowed edge and the listed ones still being broken."""
    problems = cycle_problems(PACKAGE_DIR)
    assert not problems, "\n".join(problems)


def test_tables_are_consistent() -> None:
    """Every layer has a name; the allowed edge exists in the package."""
    layers = set(LAYER_OF_FOLDER.values()) | set(LAYER_OF_MODULE.values())
    assert layers == set(range(len(LAYER_NAMES)))
    graph = import_graph(PACKAGE_DIR)
    source, target = (f"{PACKAGE}.{m}" for m in ALLOWED_CYCLE_EDGE)
    assert target in graph[source], "the allowed cycle edge is gone: remove it from the test"


#: The front end's facades (nl, nisa) -> the front-end modules allowed to import them. The
#: modules below a facade import the module that defines a name, never the facade (issue 13).
FRONTEND_FACADES = {"frontend.language": {"frontend.tensors.tensor"}, "frontend.isa": set()}


def test_front_end_facades_are_imported_from_above_only() -> None:
    """No front-end module imports the nl or nisa facade (but tensor.py, over the allowed edge):
    a new instruction or nl function imports the lower modules it needs."""
    graph = import_graph(PACKAGE_DIR)
    for facade, allowed in FRONTEND_FACADES.items():
        importers = {_short(m) for m, targets in graph.items() if f"{PACKAGE}.{facade}" in targets}
        inside = {m for m in importers if m.startswith("frontend.")} - allowed
        assert not inside, f"{sorted(inside)} import the facade {facade}; import the module " \
                           "that defines the name instead"


#: The front end's sub-packages from the bottom up, each with the flat front-end modules it may
#: import besides itself and the sub-packages below it (docs/architecture.md): index expressions
#: and masks sit on the tracer's own bottom modules; tensors on them.
FRONTEND_BOTTOM = frozenset({"frontend.tracer", "frontend.once_traced", "frontend.loopcheck"})
FRONTEND_SUBPACKAGES = ("frontend.index", "frontend.tensors")


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_front_end_sub_packages_import_only_below() -> None:
    """frontend/index/ imports nothing of the front end but itself and the tracer's bottom
    modules; frontend/tensors/ adds frontend/index/ (and the allowed edge to nl)."""
    graph = import_graph(PACKAGE_DIR)
    edge = tuple(f"{PACKAGE}.{m}" for m in ALLOWED_CYCLE_EDGE)
    bad = []
    for level, package in enumerate(FRONTEND_SUBPACKAGES):
        below = FRONTEND_SUBPACKAGES[:level + 1]
        for m, targets in graph.items():
            if not _within(_short(m), package):
                continue
            for t in targets:
                short = _short(t)
                if (not short.startswith("frontend.") or short in FRONTEND_BOTTOM
                        or any(_within(short, p) for p in below) or (m, t) == edge):
                    continue
                bad.append(f"{_short(m)} -> {short}")
    assert not bad, f"front-end sub-packages import above them: {sorted(bad)}"


# --- tests: the checker can fail --------------------------------------------------------------

#: Modules of the synthetic trees besides the top-level ones (one or more per folder).
_SAMPLE_MODULES = ("program.ir", "program.ops", "frontend.tracer", "values.memory",
                   "values.semantics", "values.execute", "timing.engines", "timing.dma",
                   "timing.cost", "compiler.schedule", "report.tables", "report.plot",
                   "report.progress", "sweep.run")


def _make_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A synthetic package with every module of the table (empty) plus ``files``
    (relative path -> source, replacing the empty module of that name)."""
    root = tmp_path / PACKAGE
    base = {f"{name.replace('.', '/')}.py": "" for name in (*LAYER_OF_MODULE, *_SAMPLE_MODULES)}
    base.update({f"{folder}/__init__.py": "" for folder in LAYER_OF_FOLDER})
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
        "cli/__init__.py": "import pandas\nimport neuroncore_sim\nfrom ..sweep import run\n",
        "sweep/run.py": "import pandas\n",
    })
    assert check_tree(root) == []


@pytest.mark.parametrize("rel, src, expect", [
    # lower layer importing a higher one
    ("program/ir.py", "from .. import simulate\n",
     "neuroncore_sim.program.ir (program, layer 1) may not import neuroncore_sim.simulate"),
    ("errors.py", "from .values import memory\n", "may not import neuroncore_sim.values.memory"),
    ("program/ir.py", "from ..values.memory import Memory\n",
     "may not import neuroncore_sim.values.memory"),
    ("result.py", "from .report import tables\n", "may not import neuroncore_sim.report.tables"),
    ("report/tables.py", "from ..sweep import run\n", "may not import neuroncore_sim.sweep.run"),
    ("simulate.py", "from .report import tables\n", "may not import neuroncore_sim.report.tables"),
    # the stage columns never import each other, nor the stages after them
    ("values/execute.py", "from ..timing.engines import run\n",
     "neuroncore_sim.values.execute (stages, layer 2) may not import neuroncore_sim.timing"),
    ("frontend/tracer.py", "from ..compiler.schedule import S\n",
     "may not import neuroncore_sim.compiler"),
    ("compiler/schedule.py", "from ..timing.engines import run\n",
     "neuroncore_sim.compiler.schedule (compiler, layer 3) may not import neuroncore_sim.timing"),
    ("compiler/schedule.py", "import simpy\n", "simpy may only be imported by"),
    ("timing/engines.py", "from neuroncore_sim.values import memory\n",
     "may not import neuroncore_sim.values.memory"),
    ("frontend/tracer.py", "from ..values.semantics import S\n",
     "may not import neuroncore_sim.values.sema"),
    ("timing/cost.py", "from ..frontend import tracer\n", "may not import neuroncore_sim.frontend"),
    # front end must not reach up into its user-facing re-export
    ("frontend/tracer.py", "from ..nki import language\n", "may not import neuroncore_sim.nki"),
    # importing the package root means importing its __init__ (an entry point)
    ("values/memory.py", "import neuroncore_sim\n",
     "may not import neuroncore_sim (entry points, layer 7)"),
    ("values/memory.py", "from .. import undefined_name\n",
     "may not import neuroncore_sim (entry points, layer 7)"),
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
    ("helpers.py", "", "module neuroncore_sim.helpers has no layer"),
    ("extra/thing.py", "", "module neuroncore_sim.extra.thing has no layer"),
    ("cli/__init__.py", "from ..nothere import x\n", "imports neuroncore_sim.nothere, which does not"),
])
def test_synthetic_violation_is_reported(tmp_path: Path, rel: str, src: str, expect: str) -> None:
    """Each kind of violation in a synthetic tree is reported with a clear message."""
    root = _make_tree(tmp_path, {rel: src})
    problems = check_tree(root)
    assert any(expect in p for p in problems), problems
    # The message names the offending file, so the author knows where to look.
    assert all(p.startswith("neuroncore_sim/") for p in problems)


def test_same_folder_and_open_layers_are_allowed() -> None:
    """Inside a folder anything goes (cycles aside); top-level modules of an open layer may
    import each other; stage columns may not."""
    assert may_import("neuroncore_sim.timing.events", "neuroncore_sim.timing.engines")
    assert may_import("neuroncore_sim.config", "neuroncore_sim.errors")
    assert may_import("neuroncore_sim.simulate", "neuroncore_sim.result")
    assert may_import("neuroncore_sim.cli", "neuroncore_sim.sweep.run")
    assert may_import("neuroncore_sim.report.tables", "neuroncore_sim.timing.analysis")
    assert not may_import("neuroncore_sim.values.memory", "neuroncore_sim.frontend.tensors.tensor")
    assert not may_import("neuroncore_sim.report.plot", "neuroncore_sim.cli")
    assert may_import("neuroncore_sim.timing.engines", "neuroncore_sim.compiler.schedule")
    assert not may_import("neuroncore_sim.compiler.schedule", "neuroncore_sim.timing.cost")


def test_cycles_are_found(tmp_path: Path) -> None:
    """A cycle inside one folder (lazy import included) is reported; the allowed edge alone
    does not make one, and a cycle through other edges is still found."""
    graph = {f"{PACKAGE}.{a}": {f"{PACKAGE}.{b}" for b in bs} for a, bs in {
        "frontend.tensors.tensor": {"frontend.language"},
        "frontend.language": {"frontend.tensors.tensor", "frontend.isa"},
        "frontend.isa": {"frontend.dma"},
        "frontend.dma": {"frontend.isa"},
        "values.memory": set(),
    }.items()}
    cycles = import_cycles(graph, ALLOWED_CYCLE_EDGE)
    assert {_short_set(c) for c in cycles} == {frozenset({"frontend.isa", "frontend.dma"})}
    graph[f"{PACKAGE}.frontend.tensors.tensor"].add(f"{PACKAGE}.frontend.isa")
    graph[f"{PACKAGE}.frontend.isa"].add(f"{PACKAGE}.frontend.tensors.tensor")
    cycles = {_short_set(c) for c in import_cycles(graph, ALLOWED_CYCLE_EDGE)}
    assert cycles == {frozenset({"frontend.tensors.tensor", "frontend.isa", "frontend.dma"})}
    root = _make_tree(tmp_path, {"values/memory.py": "def f():\n    from . import execute\n",
                                 "values/execute.py": "from .memory import M\n"})
    assert import_cycles(import_graph(root)) == {
        frozenset({f"{PACKAGE}.values.memory", f"{PACKAGE}.values.execute"})}


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
