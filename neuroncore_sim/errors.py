"""Exception hierarchy of neuroncore_sim.

Every mistake a user can make raises a subclass of :class:`SimulatorError`. Messages follow one
shape, so they read the same everywhere::

    kernel.py:42: nc_matmul: stationary must be in SBUF; expected buffer sbuf, found psum

The location is the line of the *user's kernel* that issued the failing call (found by the
front end), never a line inside this package.
"""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


#: Exit statuses of the command line: success, a failed run or check, a usage error.
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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


class UnsupportedError(SimulatorError):
    """A valid NKI feature that this simulator does not implement (yet), or not on this core."""


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
