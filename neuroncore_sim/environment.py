"""The process-wide settings a launch changes, in one place, and their restoration.

A simulated launch changes three things that belong to the whole Python process, for speed
only (values and estimates are the same without them):

- **Python's cyclic garbage collector is paused** while the kernel is traced and while the
  timing model runs. Both build hundreds of thousands of long-lived objects (instructions,
  accesses, events) and no reference cycles; the collector would rescan all of them each time
  the heap grows by a quarter (about a quarter of the run time of a 50,000-instruction launch)
  and find nothing. Reference counting still frees everything.
- **BLAS runs single-threaded** during a functional launch (threadpoolctl): the GEMMs of PSUM
  chains run in the package's own thread pool, split into as many parts as BLAS had threads
  (values/fast/gemm_jobs.py); a multi-threaded BLAS call next to a busy Python thread ran 4x
  slower on 2 cores. Numpy calls in the kernel's own Python run single-threaded meanwhile.
- **The GEMM pool threads run at a lower priority** (Linux, per thread, set by each pool
  thread on itself; values/fast/gemm_jobs.py): they are the package's own threads, kept for
  the next launch, so nothing is restored.

:func:`launch_environment` makes the first two changes and undoes them on exit, also when the
launch fails; nested blocks (``simulate`` calls ``trace``) leave the outer block's settings as
they are. The values stage registers a fork hook when its thread pool is first created (a
forked child gets no copy of a pool whose threads it does not have).

What the process can hold: a functional launch copies its inputs' values; an input larger than
the memory available (:func:`check_fits`), or a MemoryError while values are computed
(:func:`values_do_not_fit`), is a :class:`~neuroncore_sim.errors.MemoryLimitError` that names
the argument and suggests a timing-only run, which needs no values.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

from .errors import MemoryLimitError
from .values.fast.gemm_jobs import single_threaded_blas

_TIMING_ONLY = ("a timing-only run needs no values: ncs.simulate(..., functional=False), "
                "nki.benchmark, or --timing-only on the command line")


@contextlib.contextmanager
def launch_environment(*, blas_single_threaded: bool) -> Iterator[int]:
    """Pause the garbage collector and, with ``blas_single_threaded``, limit BLAS to one thread;
    both are restored on exit (also after an error). Yields how many threads BLAS had (the
    number of parts the GEMM pool splits each GEMM into), 1 when BLAS is left alone."""
    with contextlib.ExitStack() as stack:
        if gc.isenabled():
            gc.disable()
            stack.callback(gc.enable)
        threads = 1
        if blas_single_threaded:
            threads = stack.enter_context(single_threaded_blas())
        yield threads


def available_memory_bytes() -> int | None:
    """Memory the system can still give this process without swapping (Linux MemAvailable);
    None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_fits(name: str, nbytes: int, shape: tuple[int, ...], loc: str | None) -> None:
    """MemoryLimitError when argument ``name``'s values (``nbytes``) cannot be copied into a
    functional run: more than the memory available."""
    available = available_memory_bytes()
    if available is not None and nbytes > available:
        raise values_do_not_fit(f"argument {name!r} (shape {list(shape)}, {_gib(nbytes)})",
                                loc, available)


def values_do_not_fit(what: str, loc: str | None, available: int | None = None
                      ) -> MemoryLimitError:
    """The error of a functional run whose values (``what``) do not fit in memory."""
    room = f" ({_gib(available)} available)" if available is not None else ""
    return MemoryLimitError(f"{what}: the values of a functional run do not fit in this "
                            f"machine's memory{room}; {_TIMING_ONLY}", loc)


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"
