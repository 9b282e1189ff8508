"""NKI kernels on jax arrays, inside ``jax.jit`` on the CPU, through JAX host callbacks.

On a Neuron device a kernel called with jax arrays becomes an XLA custom call that the Neuron
compiler replaces with the kernel. Here it becomes a ``jax.pure_callback``: XLA calls back into
Python with the argument buffers, we run the kernel on the simulator (values, and timing inside
a profile session) and hand its outputs back. The rest of the jitted program stays XLA's.

Output shapes and dtypes: the callback must declare them while ``jax.jit`` traces, before any
value exists. We find them by a timing-only trace of the kernel with value-less placeholders
(:func:`neuroncore_sim.frameworks.specs.output_specs`) rather than by a first run: it needs no
values (jit tracing has none), costs one trace per signature, and reports a kernel's rule
errors as SimulatorErrors at trace time. Errors that depend on values can only be found while
the callback runs; jax reports those as its own runtime error, whose message carries ours.

Autodiff: a pure callback has no derivative rule of its own. Wrap the kernel in
``jax.custom_vjp`` with NKI forward and backward kernels (as the SDK guide does); ``jax.grad``
then works through it. ``jax.vmap`` over a kernel runs it once per batch element
(``vmap_method="sequential"``), since a kernel's shapes are fixed.

jax is imported only inside functions: the package does not depend on it.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from ..errors import KernelError, expected, public_entry
from ..simulate import _session, launch_grid, simulate_launch
from .profile import call_site, current_layer, launch_origin
from .specs import OutSpec, output_specs, placeholder, takes_output_args

#: ``SimResult.entry`` of launches made from a JAX program.
JAX_ENTRY = "jax"


def is_jax_array(x: Any) -> bool:
    """True for a ``jax.Array``, concrete or a tracer inside ``jax.jit`` / ``jax.grad``.
    jax is never imported here: a jax array can only exist if the caller imported jax."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.Array)


def has_jax_args(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """Whether any argument of a kernel call is a jax array (or tracer)."""
    return any(is_jax_array(a) for a in args) or any(is_jax_array(v) for v in kwargs.values())


def _spec(x: Any, what: str) -> Any:
    return placeholder(x.shape, x.dtype, what) if is_jax_array(x) else x


def _out_structs(specs: Sequence[OutSpec]) -> tuple[Any, ...]:
    import jax
    return tuple(jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs)


def _given_specs(out_shape: Any) -> tuple[OutSpec, ...]:
    """``out_shape`` of :func:`nki_call` (one ShapeDtypeStruct-like object or a sequence of
    them) as OutSpecs."""
    items = out_shape if isinstance(out_shape, (tuple, list)) else (out_shape,)
    specs = []
    for i, o in enumerate(items):
        if not (hasattr(o, "shape") and hasattr(o, "dtype")):
            raise KernelError(expected(f"nki_call out_shape[{i}]",
                                       "a jax.ShapeDtypeStruct (an object with shape and dtype)",
                                       f"{type(o).__name__} {o!r}"), loc=call_site()[0])
        specs.append(OutSpec(tuple(int(s) for s in o.shape), np.dtype(o.dtype)))
    return tuple(specs)


def _scalar(x: Any, where: Any, name: str) -> Any:
    """A 0-d jax array as the Python number a kernel takes for a scalar; refused when traced
    (its value is unknown while jax traces, and a kernel's constants must be known)."""
    if not is_jax_array(x) or x.ndim != 0:
        return x
    import jax
    if isinstance(x, jax.core.Tracer):
        raise KernelError(expected(f"{name}: argument {where!r}",
                                   "a tensor (a jax array with at least 1 dim) or a constant",
                                   "a traced jax scalar; pass a Python number, or mark the "
                                   "argument static (jax.jit(..., static_argnums=...))"),
                          loc=call_site()[0])
    return x.item()


def call_kernel(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                grid: Any = (), out_shape: Any = None, entry: str = JAX_ENTRY) -> Any:
    """Run an NKI kernel on jax arrays (inside ``jax.jit`` too) as a host callback.

    Args:
        kernel: an ``nki.jit`` kernel or a plain kernel function.
        args, kwargs: the kernel's arguments; jax arrays are its tensors, anything else is passed
            as a compile-time constant (it must not be a traced value).
        grid: the SPMD grid (default: the kernel object's own, from ``kernel[grid]``).
        out_shape: the outputs' ``jax.ShapeDtypeStruct`` (or a sequence of them). Needed for an
            output-argument kernel (one that writes trailing output parameters and returns
            nothing): arrays of these shapes are passed as those parameters and returned. For a
            kernel that returns its outputs it is checked against what the kernel declares.

    Returns:
        One jax array, or a tuple of them for a kernel with several outputs.
    """
    import jax

    grid = launch_grid(grid if grid not in ((), None) else getattr(kernel, "grid", ()))
    name = getattr(kernel, "__name__", "kernel")
    session = _session()
    if session is not None and not session.functional:
        # XLA goes on computing with the kernel's results: a launch without values has none.
        raise KernelError(f"{name}: a kernel in a JAX program needs its values, but the open "
                          "profile session / record_launches block is timing-only "
                          "(functional=False); open it with functional=True",
                          loc=call_site()[0])
    args = tuple(_scalar(a, i, name) for i, a in enumerate(args))
    kwargs = {k: _scalar(v, k, name) for k, v in kwargs.items()}
    given = _given_specs(out_shape) if out_shape is not None else None
    out_args = given is not None and takes_output_args(kernel, len(args), len(given), kwargs)
    spec_args = tuple(_spec(a, f"argument {i} dtype") for i, a in enumerate(args))
    spec_kwargs = {k: _spec(v, f"argument {k!r} dtype") for k, v in kwargs.items()}
    if out_args:
        assert given is not None
        spec_args += tuple(placeholder(s.shape, s.dtype, "out_shape dtype") for s in given)
        output_specs(kernel, spec_args, spec_kwargs, grid)  # checks the kernel's rules
        specs = given
    else:
        specs = output_specs(kernel, spec_args, spec_kwargs, grid)
        if not specs:
            raise KernelError(
                f"{name}: the kernel returns no outputs; jax arrays are immutable, so a kernel "
                "called with jax arrays must return its nl.shared_hbm outputs, or be called "
                "with nki_call(..., out_shape=...) for trailing output parameters",
                loc=call_site()[0])
        if given is not None and given != specs:
            raise KernelError(expected(f"{name}: nki_call out_shape",
                                       "the shapes and dtypes the kernel returns "
                                       f"{[(s.shape, str(s.dtype)) for s in specs]}",
                                       str([(s.shape, str(s.dtype)) for s in given])),
                              loc=call_site()[0])

    # Where the launch comes from, for profile sessions: known now, while jax traces the
    # user's function; the callback runs later, from XLA, with none of that on its stack.
    site, func = call_site()
    layer_name = current_layer() or func
    # Tensors go through the callback as operands; constants are closed over.
    tensor_pos = [i for i, a in enumerate(args) if is_jax_array(a)]
    tensor_keys = [k for k, v in kwargs.items() if is_jax_array(v)]
    operands = [args[i] for i in tensor_pos] + [kwargs[k] for k in tensor_keys]

    def host(*values: Any) -> tuple[np.ndarray, ...]:
        # Writable copies: XLA's buffers are read-only, and a kernel may write its arguments.
        vals = [np.array(v, copy=True) for v in values]
        call_args = list(args)
        call_kwargs = dict(kwargs)
        for i, v in zip(tensor_pos, vals):
            call_args[i] = v
        for k, v in zip(tensor_keys, vals[len(tensor_pos):]):
            call_kwargs[k] = v
        outs = [np.zeros(s.shape, s.dtype) for s in specs] if out_args else []
        with launch_origin(layer_name, site):
            res = simulate_launch(kernel, tuple(call_args) + tuple(outs), call_kwargs,
                                  grid=grid, timing=False, entry=entry)
        got = outs if out_args else list(res.outputs)
        if any(g is None for g in got):  # a function jitted before a timing-only block opened
            raise KernelError(f"{name}: a kernel in a JAX program needs its values, but the "
                              "open profile session / record_launches block is timing-only "
                              "(functional=False)", loc=site)
        return tuple(np.asarray(g, dtype=s.dtype).reshape(s.shape)
                     for g, s in zip(got, specs))

    results = jax.pure_callback(host, _out_structs(specs), *operands,
                                vmap_method="sequential")
    return results[0] if len(results) == 1 else tuple(results)


@public_entry
def nki_call(kernel: Any, *args: Any, grid: Any = (), out_shape: Any = None,
             **kwargs: Any) -> Any:
    """Call an NKI kernel from JAX code, ``jax.jit`` included (the ``jax_neuronx.nki_call``
    entry point): ``nki_call(kernel, a, b, grid=(2, 2), out_shape=jax.ShapeDtypeStruct(...))``.

    ``out_shape`` may be left out for a kernel that returns its outputs (their shapes are read
    from the kernel); see :func:`call_kernel`.
    """
    if not callable(getattr(kernel, "func", kernel)):
        raise KernelError(expected("nki_call kernel", "an NKI kernel (a function, or an nki.jit "
                                   "kernel)", f"{type(kernel).__name__} {kernel!r}"),
                          loc=call_site()[0])
    return call_kernel(kernel, args, kwargs, grid=grid, out_shape=out_shape, entry="nki_call")
