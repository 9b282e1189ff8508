"""The simulator's limit on the size of one launch (``max_instructions_per_launch``).

The simulator runs every iteration of a kernel's loops, where NKI's compiler traces a loop's
body once: a loop nest of 10**9 iterations would run for hours and fill memory (about 1.5 KiB an
instruction). So a loop nest whose iterations alone exceed the limit is refused when it starts,
and a launch that records more instructions than the limit stops at the one past it; both with
an :class:`~neuroncore_sim.errors.InstructionLimitError` naming the loop's line.
"""

from __future__ import annotations

from ..errors import InstructionLimitError
from ..program.ir import SourceLoc

_RAISE = ("raise the config field max_instructions_per_launch (a TOML config: "
          "max_instructions_per_launch = N) to simulate a launch this large")


def check_loop_nest(iterations: int, enclosing: int, limit: int, loc: SourceLoc | None
                    ) -> int:
    """The iterations of the loop nest a loop of ``iterations`` starts (``enclosing``: those
    of the loops it runs in, times the SPMD instances: each is traced); InstructionLimitError
    when they exceed ``limit``."""
    nest = iterations * enclosing
    if nest > limit:
        inside = (f" inside loops (or SPMD instances) of {enclosing:,} iterations"
                  if enclosing > 1 else "")
        raise InstructionLimitError(
            f"loop of {iterations:,} iterations{inside}: the simulator runs every iteration "
            f"(NKI traces the body once), {nest:,} in all; expected at most "
            f"{limit:,} (max_instructions_per_launch): {_RAISE}, or make the loop shorter",
            str(loc) if loc is not None else None)
    return nest


def too_many(limit: int, loc: SourceLoc | None,
             loops: tuple[tuple[object, int], ...]) -> InstructionLimitError:
    """The error for a launch that records more than ``limit`` instructions; ``loops``: the
    running traced loops, outermost first, as (loop line, iteration)."""
    where = ""
    if loops:
        line, k = loops[-1]
        where = f" in the loop at {line} (iteration {k:,})"
    return InstructionLimitError(
        f"the launch records more than {limit:,} instructions (max_instructions_per_launch)"
        f"{where}; {_RAISE}", str(loops[0][0]) if loops else (str(loc) if loc else None))
