"""What ``nki.jit`` (and ``nki.trace`` / ``nki.baremetal``) return: a kernel object that
launches on the simulator when called, and is inlined when called from a running kernel."""

from __future__ import annotations

from typing import Any, Callable

from ..errors import public_entry
from ..frontend import tracer as _tracer
from ..frameworks.kernel_ref import mark_kernel
from ..frameworks.jax_ops import call_kernel, has_jax_args
from ..frontend.torch_io import TorchArgs
from ..simulate import launch_grid, simulate_launch


class Kernel:
    """What ``nki.jit`` returns: call it like the function; ``kernel[grid](...)`` for SPMD.

    A call runs the kernel on the simulator and returns its outputs as numpy arrays (like
    ``nki.simulate_kernel``), or as torch tensors when it was given torch tensors. Given jax
    arrays (inside ``jax.jit`` too) it runs as a JAX host callback and returns jax arrays
    (neuroncore_sim.frameworks.jax_ops). Inside a running kernel it is inlined as a sub-kernel
    call.
    """

    def __init__(self, func: Callable[..., Any], grid: tuple[int, ...] = (),
                 options: dict[str, Any] | None = None) -> None:
        self.func = func
        mark_kernel(func)  # the only kind of function a backend config may launch
        self.grid = grid
        self.options = options or {}
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = getattr(func, "__doc__", None)
        self.__wrapped__ = func

    def __getitem__(self, grid: Any) -> Kernel:
        return Kernel(self.func, launch_grid(grid), self.options)

    @public_entry
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _tracer.active_or_none() is not None:
            return self.func(*args, **kwargs)  # a sub-kernel: inline it
        if has_jax_args(args, kwargs):  # jax arrays or jit tracers: a JAX host callback
            return call_kernel(self, args, kwargs, grid=self.grid)
        targs = TorchArgs(args, kwargs)  # torch arguments give torch results
        # Values only (fast), as the SDK's simulator; timed inside record_launches.
        entry = "nki.baremetal" if self.options.get("mode") == "baremetal" else "nki.jit"
        res = simulate_launch(self, targs.args, targs.kwargs, grid=self.grid, timing=False,
                              entry=entry)
        return targs.results(_unwrap(res.outputs))

    def __repr__(self) -> str:
        return f"<nki kernel {self.__name__} grid={list(self.grid)}>"


def _unwrap(outputs: tuple[Any, ...]) -> Any:
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else outputs
