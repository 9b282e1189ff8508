"""The NKI front end: ``nl``, ``nisa`` and ``ncc`` calls traced into a Program.

Kernels see these modules through :mod:`neuroncore_sim.nki`. Each call checks its arguments
against the NKI rules (errors name the kernel's ``file.py:LINE``) and records instructions with
:mod:`.tracer`; it never computes values or time itself.
"""
