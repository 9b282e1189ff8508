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
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

from .values.fast.gemm_jobs import single_threaded_blas


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
