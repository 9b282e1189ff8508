"""Parameter sweeps: one kernel over a grid of parameters, simulated point by point and ranked.

- :mod:`.run`: :func:`sweep`, the executors (process pool, Dask) and the resumable points file;
- :mod:`.point`: one point (route its parameters, simulate, measure);
- :mod:`.table`, :mod:`.plot`: the ranked table and its plot; :mod:`.cli`: ``neuroncore-sim sweep``;
- :mod:`.kernel_file`: the ``kernels/*.py`` convention (``file.py::kernel``, example inputs)
  shared with ``neuroncore-sim profile``.
"""

from .run import EXECUTORS, PLOT_FILE, POINTS_FILE, TABLE_FILE, expand, point_key, sweep

__all__ = ["sweep", "expand", "point_key", "EXECUTORS", "POINTS_FILE", "TABLE_FILE", "PLOT_FILE"]
