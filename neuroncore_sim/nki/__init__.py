"""``neuroncore_sim.nki``: the NKI entry points (``nki.jit``, ``nki.simulate_kernel``, ...).

Kernels written for ``neuronxcc.nki`` (AWS Neuron SDK 2.20-2.26) use these names unchanged:

    from neuroncore_sim import nki
    import neuroncore_sim.nki.language as nl

    @nki.jit
    def kernel(a): ...
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import KernelError, caller_loc, expected, public_entry
from ..frontend import typing
from . import compiler, isa, language
from ..frontend.tensors.tensor import NkiTensor as tensor  # ``nki.tensor``: the reference's tensor type
from ..simulate import simulate_launch
from .kernel import Kernel
from ..frameworks.config import FrameworkKernel
from ..frontend.torch_io import TorchArgs
from .benchmark import benchmark, profile

__all__ = ["jit", "trace", "baremetal", "simulate_kernel", "benchmark", "profile", "language",
           "isa", "typing", "compiler", "Kernel", "FrameworkKernel", "tensor"]


def jit(func: Callable[..., Any] | None = None, *, mode: str = "auto", **options: Any) -> Any:
    """Make a kernel launchable: ``@nki.jit`` or ``@nki.jit(mode=..., ...)``.

    Every ``mode`` ("auto", "simulation", "baremetal", "jax", "torchxla", "benchmark") runs on
    the simulator; other keyword arguments are accepted and kept on the kernel.
    """
    def wrap(f: Callable[..., Any]) -> Kernel:
        if isinstance(f, Kernel):
            return f
        if not callable(f):  # said here, at the decorator, not at the first launch
            raise KernelError(expected("nki.jit", "a kernel function",
                                       f"{type(f).__name__} {f!r:.60}"), caller_loc())
        return Kernel(f, options=dict(options, mode=mode))
    return wrap(func) if func is not None else wrap


trace = jit


def baremetal(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``nki.baremetal``: run the kernel (on the simulator) with numpy inputs and outputs."""
    return jit(func, mode="baremetal", **options)


@public_entry
def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a kernel functionally and return its outputs, like AWS's ``nki.simulate_kernel``.

    ``kernel`` may be a plain function, an ``nki.jit`` / ``nki.trace`` kernel (any ``mode``), or
    ``kernel[grid]``. Values only, no timing, so it stays fast; under ``neuroncore-sim run`` (or
    inside ``neuroncore_sim.record_launches()``) the launch is timed and reported as well.
    """
    targs = TorchArgs(args, kwargs)  # torch arguments give torch results
    res = simulate_launch(kernel, targs.args, targs.kwargs, timing=False,
                          entry="nki.simulate_kernel")
    if not res.outputs:
        return None
    return targs.results(res.outputs[0] if len(res.outputs) == 1 else res.outputs)
