"""Exception hierarchy of neuroncore_sim.

Every mistake a user can make raises a subclass of :class:`SimulatorError`. Messages follow one
shape, so they read the same everywhere::

    kernel.py:42: nc_matmul: stationary must be in SBUF; expected buffer sbuf, found psum

The location is the line of the *user's kernel* that issued the failing call (found by the
front end), never a line inside this package.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import warnings
from types import TracebackType
from typing import Any, Callable, Iterable, TypeVar

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


#: Exit statuses of the command line: success, a failed run or check, a usage error.
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: Exit status after Ctrl-C, as shells report a process ended by SIGINT.
EXIT_INTERRUPTED = 130


class SimulatorError(Exception):
    """Root of all errors raised for user mistakes or unsupported features.

    Args:
        message: what went wrong, ideally "what: expected X, found Y".
        loc: the kernel's "file.py:LINE" (or None when no kernel line applies).
    """

    def __init__(self, message: str, loc: str | None = None) -> None:
        self.message = message
        self.loc = loc
        super().__init__(f"{loc}: {message}" if loc else message)

    def locate(self, loc: str | None) -> None:
        """Attach ``loc`` ("file.py:LINE") to an error raised without one (no-op otherwise)."""
        if self.loc is None and loc:
            self.loc = loc
            self.args = (f"{loc}: {self.message}",)


class ConfigError(SimulatorError):
    """A hardware configuration (preset name, TOML file or field value) is invalid."""


class KernelError(SimulatorError):
    """A kernel broke an NKI rule (shape, dtype, memory space, index, argument)."""


class ShapeError(KernelError):
    """Operand shapes do not match what the instruction requires."""


class DTypeError(KernelError):
    """An operand's data type is not allowed for the instruction."""


class MemorySpaceError(KernelError):
    """An operand lives in a memory (HBM, SBUF, PSUM) the instruction or engine cannot use."""


class AccessError(KernelError):
    """An index or access pattern is malformed or falls outside its tensor."""


class CapacityError(KernelError):
    """A kernel needs more on-chip memory (SBUF, PSUM) than the NeuronCore has."""


class InstructionLimitError(KernelError):
    """A launch would record more instructions than the config's
    ``max_instructions_per_launch`` (a loop of 10**9 iterations): a limit of the simulator."""


class MemoryLimitError(SimulatorError):
    """The values of a functional run do not fit in this machine's memory (a timing-only run
    needs none of them)."""


class UnsupportedError(SimulatorError):
    """A valid NKI feature that this simulator does not implement (yet), or not on this core."""


class InternalError(SimulatorError):
    """The simulator found its own state inconsistent: a bug of the simulator, not the kernel's
    (the message says what, to report)."""


class UnsupportedAttributeError(UnsupportedError, AttributeError):
    """A name looked up on an NKI module (``nl.<name>``) that the simulator does not implement:
    an :class:`UnsupportedError`, and an ``AttributeError`` so that ``hasattr``,
    ``getattr(module, name, default)`` and tab completion treat it as a missing attribute."""


class SimulatorWarning(UserWarning):
    """Root of the warnings about kernels that run but probably do not do what was meant on the
    hardware. Messages start with the kernel's "file.py:LINE"."""


class InputWriteWarning(SimulatorWarning):
    """A return-style kernel writes one of its input tensors."""


class UninitializedReadWarning(SimulatorWarning):
    """An instruction reads on-chip or HBM memory that nothing wrote (garbage on hardware)."""


class ActivationRangeWarning(SimulatorWarning):
    """A ScalarE activation function got inputs outside its documented valid range."""


class SpillWarning(SimulatorWarning):
    """SBUF is over-subscribed by the compiler-managed tiles live at once: the compiler spills
    some of them to HBM and reloads them (the kernel runs, slower; docs/model.md)."""


class AllocationWarning(SimulatorWarning):
    """A directly allocated SBUF tile (``ncc.sbuf.alloc`` / ``mod_alloc``) starts inside an
    SBUF partition but runs past its physical end: the compiler checks only the start address,
    and the bytes past the end do not exist on the hardware (docs/model.md)."""


class UnwrittenOutputWarning(SimulatorWarning):
    """A kernel returns an output tensor it never wrote, or wrote only in part: those elements
    are garbage on the hardware (NaN here)."""


class ReturnValueWarning(SimulatorWarning):
    """A kernel's return value is not what a device launch hands back: a Python value among its
    outputs, or nothing returned while it wrote HBM tensors of its own (their values are lost)."""


class LoopDependencyWarning(SimulatorWarning):
    """An ``nl.affine_range`` iteration reads what an earlier iteration wrote (not an
    accumulation): the compiler may reorder or pipeline the iterations."""


def expected(what: str, want: object, found: object) -> str:
    """Format the standard "what; expected X, found Y" message body."""
    return f"{what}; expected {want}, found {found}"


def caller_loc() -> str | None:
    """``"file.py:LINE"`` of the innermost stack frame outside this package: where the user
    called in (for errors raised outside a kernel), or None."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return None
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


#: The "file.py:LINE: " a simulator warning's message starts with.
_LOC_PREFIX = re.compile(r"([^\s:]+\.py):(\d+): ")


def warn_at_kernel_lines(found: Iterable[SimulatorWarning], files: Iterable[str],
                         kernel_globals: dict[str, Any] | None = None) -> None:
    """Issue simulator warnings so that Python's warning location (the ``path:LINE:`` it prints,
    ``WarningMessage.filename`` / ``lineno``, ``-W`` and ``filterwarnings`` module filters) is
    the kernel line the message names, not a line inside this package.

    Args:
        found: the warnings; each message starts with the kernel's ``file.py:LINE``.
        files: full paths of the source files the launch ran (the kernel's, and those its
            instructions came from), to turn the message's base name into a path.
        kernel_globals: the kernel's module globals: its ``__warningregistry__`` keeps a
            repeated warning from showing twice (as ``warnings.warn`` from that module would).

    A message whose file is not among ``files`` (or names two of them) is located at the
    innermost caller outside this package, the line that launched the kernel.
    """
    by_name: dict[str, set[str]] = {}
    for path in files:
        by_name.setdefault(os.path.basename(path), set()).add(path)
    kernel_file = (kernel_globals or {}).get("__file__")
    for w in found:
        m = _LOC_PREFIX.match(str(w))
        paths = by_name.get(m.group(1), set()) if m else set()
        if len(paths) == 1:
            path, line = next(iter(paths)), int(m.group(2)) if m else 0
            module_globals = kernel_globals if _same_file(path, kernel_file) else \
                _module_globals(path)
        else:
            path, line, module_globals = _caller_outside_package()
        registry = (module_globals.setdefault("__warningregistry__", {})
                    if module_globals is not None else None)
        module = (module_globals or {}).get("__name__") or \
            os.path.splitext(os.path.basename(path))[0]
        warnings.warn_explicit(w, type(w), path, line, module=module, registry=registry,
                               module_globals=module_globals)


def _same_file(a: str, b: object) -> bool:
    return isinstance(b, str) and os.path.realpath(a) == os.path.realpath(b)


def _module_globals(path: str) -> dict[str, Any] | None:
    """Globals of the imported module whose file is ``path`` (None: not imported as a module)."""
    for module in list(sys.modules.values()):
        if _same_file(path, getattr(module, "__file__", None)):
            return vars(module)
    return None


def _caller_outside_package() -> tuple[str, int, dict[str, Any] | None]:
    """(file, line, globals) of the innermost stack frame outside this package."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno, frame.f_globals


# --- traceback filtering -------------------------------------------------------------------------
# As JAX does: an exception leaving a public entry point (ncs.simulate, a kernel call, ...) has
# this package's frames taken out of its traceback, so what a user reads is their own code and
# the error line. NEURONCORE_SIM_TRACEBACK_FILTERING=off, NEURONCORE_SIM_DEBUG=1 or --debug on
# the command line keeps every frame.

#: The environment variable that turns the filtering off ("off", "0", "false" or "no").
TRACEBACK_ENV = "NEURONCORE_SIM_TRACEBACK_FILTERING"
_NOTE = (f"(neuroncore_sim's own frames are hidden from this traceback; set {TRACEBACK_ENV}=off, "
         "or give the command line --debug, to see them)")
_full_tracebacks = [False]


def show_full_tracebacks(on: bool = True) -> None:
    """Keep (True) or hide again (False) this package's frames in tracebacks (the CLI's
    ``--debug``)."""
    _full_tracebacks[0] = on


#: The environment variable that, set to 1 / true / yes / on, acts as ``--debug`` everywhere.
DEBUG_ENV = "NEURONCORE_SIM_DEBUG"


def debug_from_environment() -> bool:
    """Whether NEURONCORE_SIM_DEBUG asks for what ``--debug`` does."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def filtering_tracebacks() -> bool:
    """Whether exceptions leaving a public entry point lose this package's frames."""
    setting = os.environ.get(TRACEBACK_ENV, "on").strip().lower()
    return not (_full_tracebacks[0] or debug_from_environment()) and \
        setting not in ("off", "0", "false", "no")


def is_package_frame(filename: str) -> bool:
    """Whether code of ``filename`` is this package's own."""
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


def _stdlib_dir() -> str:
    import sysconfig

    return os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


_STDLIB_DIR = _stdlib_dir()


def _dependency_dirs() -> tuple[str, ...]:
    """The folders of the libraries this package calls into (found without importing them): a
    Ctrl-C may land inside one of them, e.g. in numpy while a dtype prints."""
    import importlib.util
    dirs = []
    for name in ("numpy", "ml_dtypes", "simpy", "pandas", "matplotlib", "tqdm"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for folder in (spec.submodule_search_locations or []) if spec else []:
            dirs.append(os.path.join(os.path.abspath(folder), ""))
    return tuple(dirs)


_DEPENDENCY_DIRS = _dependency_dirs()


def _is_stdlib_frame(filename: str) -> bool:
    """Code of Python's standard library or of the libraries this package depends on (not of
    other installed packages, which may be a user's kernels)."""
    if filename.startswith("<frozen"):
        return True
    path = os.path.abspath(filename)
    return (path.startswith(_STDLIB_DIR) and "-packages" + os.sep not in path
            or path.startswith(_DEPENDENCY_DIRS))


def user_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without the frames of this package, nor those of the standard library or the
    package's dependencies it called (contextlib, threading, numpy, ...): a new chain; None when
    none is left."""
    kept: list[TracebackType] = []
    inside = False  # whether the last frame that was not a library's was this package's
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if is_package_frame(name):
            inside = True
        elif _is_stdlib_frame(name):
            if not inside:
                kept.append(tb)
        else:
            inside = False
            kept.append(tb)
        tb = tb.tb_next
    chain = None
    for entry in reversed(kept):
        chain = TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return chain


def hide_package_frames(error: BaseException) -> None:
    """Take this package's frames out of ``error``'s traceback and those of the exceptions it
    was raised from or during, noting once that they were hidden."""
    seen: set[int] = set()
    hidden = False
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        tb = current.__traceback__
        filtered = user_frames(tb)
        if _length(filtered) != _length(tb):
            hidden = True
            current.__traceback__ = filtered
        current = current.__cause__ or (None if current.__suppress_context__
                                        else current.__context__)
    if hidden and _NOTE not in getattr(error, "__notes__", ()):
        error.add_note(_NOTE)


def _length(tb: TracebackType | None) -> int:
    n = 0
    while tb is not None:
        n, tb = n + 1, tb.tb_next
    return n


_F = TypeVar("_F", bound=Callable[..., Any])


def public_entry(fn: _F) -> _F:
    """Decorate a function users call: an exception leaving it (a kernel's error, Ctrl-C) has
    this package's frames hidden (:func:`hide_package_frames`) unless filtering is off."""
    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (Exception, KeyboardInterrupt) as e:
            if filtering_tracebacks():
                hide_package_frames(e)
            raise
    return entry  # type: ignore[return-value]
