"""Presentation: what a user reads about a simulated launch, made from its :class:`SimResult`.

- :mod:`.tables`: per-engine, DMA, source-line, memory and stall tables, and the text summary
  (``report.summary_text(res)`` is what the command line prints);
- :mod:`.plot`: the timeline PNG; :mod:`.chrome_trace`: the Perfetto / Chrome trace;
- :mod:`.explorer`: the profile as Neuron Explorer's Parquet tables (pyarrow, optional);
- :mod:`.progress`: tqdm progress bars for long simulations;
- :mod:`.comparison`: two launches side by side (``report.compare(res_a, res_b)``: latency
  change, engine busy time, bounds, the lines whose time changed most).

Nothing here feeds back into the simulation. Only the tables are imported with the package;
the PNG needs matplotlib, imported when a plot is drawn.
"""

from .comparison import Comparison, compare
from .tables import (MAIN_ENGINES, dma_line_table, dma_table, engine_table, full_text,
                     memory_series, memory_table, source_table, stall_table, summary_text)

__all__ = ["MAIN_ENGINES", "engine_table", "dma_table", "dma_line_table", "source_table",
           "memory_table", "memory_series", "stall_table", "summary_text", "full_text", "compare", "Comparison"]
