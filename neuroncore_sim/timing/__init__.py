"""Time: the discrete-event model of one launch on a NeuronCore-v2, and what is read from it.

:mod:`.schedule` turns a Program into per-engine queues with hazards, :mod:`.capacity` plans
SBUF / PSUM buffers, :mod:`.cost` and :mod:`.cost_select` give each instruction's engine cycles,
:mod:`.dma` the DMA engines and HBM, :mod:`.engines` runs the simpy simulation into
:mod:`.events`; :mod:`.analysis` (bounds, bottleneck, stalls) and :mod:`.memory_use` (SBUF /
PSUM use over time) read its result. simpy is imported by :mod:`.dma` and :mod:`.engines` only.
"""
