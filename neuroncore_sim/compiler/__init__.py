"""The compile stage: what neuronx-cc makes of a kernel before the hardware runs it.

The front end records the Program *as the kernel wrote it*; the hardware runs what the compiler
emits. This package turns the one into the other: per SPMD instance, the per-engine instruction
streams in the order the compiler chose, the semaphore waits between them (dependency edges from
read/write hazards), and the compiler's memory decisions (buffer rings, placement by live range,
spills). The timing stage (``neuroncore_sim.timing``) only runs those streams on the modelled
hardware. Each pass is one module whose docstring names the compiler behaviour it models and its
source; passes are listed, with their switches, in :mod:`.passes`.
"""
