"""``nki.FrameworkKernel``: the backend config of an NKI custom call, and a runner that executes
a kernel from that config alone.

On a Neuron device each NKI kernel call in a framework graph is an XLA custom call
(``custom_call_target="AwsNeuronCustomNativeKernel"``) whose ``backend_config`` a framework's
subclass of ``FrameworkKernel`` produces with ``dump_config(*args, **kwargs)``; the HLO
instruction takes the kernel's input tensors as operands and returns its output tensors. A
framework subclass implements three methods: ``translate_to_neuron_dtype``,
``is_framework_tensor`` and ``map_framework_tensor``.

Our ``backend_config`` is a JSON string (the SDK's is opaque; ours is meant to be read): the
kernel (module, qualified name, file), its SPMD grid, its tensor parameters with their shapes
and dtypes (it is specialised to them: one config per set of shapes), its compile-time
constants, which parameters are the operands and which tensors the results.
:func:`run_backend_config` runs a launch from the config and the operand arrays only.

Which tensors are inputs and outputs is read from a timing-only trace of the kernel: a kernel
that returns tensors has those as outputs and all its tensor arguments as inputs; a kernel that
returns nothing (output-argument style) has as outputs the arguments it writes, and as inputs
the others (an argument both read and written is both).
"""

from __future__ import annotations

import inspect
import json
import warnings
from typing import Any

import numpy as np

from ..dtypes import dtype_name, to_dtype
from ..errors import KernelError, caller_loc, expected, public_entry
from ..simulate import launch_grid, simulate_launch, trace
from ..frontend.typing import TensorType
from .kernel_ref import load_kernel, mark_kernel
from .specs import _ReturnCapture, def_loc, output_specs

#: Version of our backend_config layout.
CONFIG_FORMAT = "neuroncore_sim.nki_custom_call/1"
#: What the SDK's custom calls name as their target.
CUSTOM_CALL_TARGET = "AwsNeuronCustomNativeKernel"


class FrameworkKernel:
    """The HLO custom call of an NKI kernel, for framework developers (as ``nki.FrameworkKernel``).

    Subclass it, implement :meth:`translate_to_neuron_dtype`, :meth:`is_framework_tensor` and
    :meth:`map_framework_tensor`, then ``dump_config(*args, **kwargs)`` gives
    ``(backend_config, input_names, output_names)`` for those arguments.

    Args:
        func_name: the kernel's name (default: ``func.__name__``).
        func: the kernel (a function or an ``nki.jit`` kernel).
        grid: its SPMD launch grid.
        enable_cache: reuse the config made for the same shapes, constants and grid.
    """

    def __init__(self, func_name: str | None = None, func: Any = None, grid: Any = (),
                 enable_cache: bool = True, **options: Any) -> None:
        if not callable(getattr(func, "func", func)):
            raise KernelError(expected("FrameworkKernel func", "an NKI kernel (a function, or "
                                       "an nki.jit kernel)", f"{type(func).__name__} {func!r}"),
                              loc=caller_loc())
        self.func = getattr(func, "func", func)
        mark_kernel(self.func)
        self.func_name = func_name or getattr(self.func, "__name__", "kernel")
        self.grid = launch_grid(grid if grid not in ((), None) else getattr(func, "grid", ()))
        self.enable_cache = enable_cache
        self.options = options
        self._cache: dict[Any, tuple[str, list[str], list[str]]] = {}

    # --- what a framework implements ----------------------------------------------------------
    def translate_to_neuron_dtype(self, _dtype: Any) -> Any:
        """A framework dtype as a numpy / ``nl`` dtype (e.g. torch.bfloat16 -> nl.bfloat16)."""
        raise NotImplementedError(f"{type(self).__name__}.translate_to_neuron_dtype")

    def is_framework_tensor(self, t: Any) -> bool:
        """Whether ``t`` is a tensor (anything else is a compile-time constant)."""
        raise NotImplementedError(f"{type(self).__name__}.is_framework_tensor")

    def map_framework_tensor(self, t: Any) -> tuple[Any, Any]:
        """A framework tensor's ``(shape, framework dtype)``."""
        raise NotImplementedError(f"{type(self).__name__}.map_framework_tensor")

    # --- the config ---------------------------------------------------------------------------
    @public_entry
    def dump_config(self, *args: Any, **kwargs: Any) -> tuple[str, list[str], list[str]]:
        """The ``backend_config`` (a JSON string), the input names and the output names of the
        custom call for these arguments; specialised to their shapes and dtypes."""
        bound = _bind(self.func, args, kwargs)
        params: dict[str, Any] = {}
        tensors: dict[str, TensorType] = {}
        constants: dict[str, Any] = {}
        for name, value in bound.items():
            if self.is_framework_tensor(value):
                shape, fdt = self.map_framework_tensor(value)
                ndt = to_dtype(self.translate_to_neuron_dtype(fdt),
                               f"argument {name!r} dtype")
                tensors[name] = params[name] = TensorType(tuple(int(s) for s in shape), ndt)
            else:
                constants[name] = params[name] = _constant(name, value, self.func)
        key = (self.grid, tuple((k, v.shape, str(v.dtype)) for k, v in tensors.items()),
               json.dumps(constants, sort_keys=True))
        if self.enable_cache and key in self._cache:
            return self._cache[key]
        inputs, outputs, out_args = _roles(self.func, params, self.grid)
        config = {
            "format": CONFIG_FORMAT, "custom_call_target": CUSTOM_CALL_TARGET,
            "func_name": self.func_name, "kernel": _kernel_ref(self.func), "grid": list(self.grid),
            "params": [{"name": k, "shape": list(tensors[k].shape),
                        "dtype": dtype_name(tensors[k].dtype)}
                       if k in tensors else {"name": k, "value": constants[k]}
                       for k in params],
            "inputs": inputs, "outputs": outputs, "output_args": out_args,
        }
        result = (json.dumps(config, sort_keys=True), [f"input{i}" for i in range(len(inputs))],
                  [f"output{i}" for i in range(len(outputs))])
        if self.enable_cache:
            self._cache[key] = result
        return result


def _bind(fn: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise KernelError(f"{fn.__name__}: arguments do not match the kernel's signature: {e}",
                          loc=caller_loc()) from e
    bound.apply_defaults()
    for name, p in bound.signature.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise KernelError(f"{fn.__name__}: parameter *{name}: a custom call's kernel needs "
                              "named parameters", def_loc(fn))
    return dict(bound.arguments)


def _constant(name: str, value: Any, fn: Any) -> Any:
    try:
        json.dumps(value)
    except TypeError:
        raise KernelError(expected(f"{fn.__name__}: constant argument {name!r}",
                                   "a JSON value (number, string, bool, None, list, dict)",
                                   f"{type(value).__name__}"), loc=caller_loc()) from None
    return value


def _roles(fn: Any, params: dict[str, Any], grid: tuple[int, ...]
           ) -> tuple[list[str], list[dict[str, Any]], bool]:
    """Input parameter names, output descriptions, and whether outputs are parameters."""
    tensor_names = [k for k, v in params.items() if isinstance(v, TensorType)]
    specs = output_specs(fn, (), params, grid)
    if specs:
        return tensor_names, [{"shape": list(s.shape), "dtype": dtype_name(s.dtype)}
                              for s in specs], False
    cap = _ReturnCapture(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        launch = trace(cap, grid=grid, functional=False, **params)
    prog = launch.program
    written, read = set(), set()
    for ins in prog.instructions:
        written.update(prog.tensors[a.tensor.id].name for a in ins.dsts.values()
                       if a.tensor.kind == "input")
        read.update(prog.tensors[a.tensor.id].name for a in ins.srcs.values()
                    if a.tensor.kind == "input")
    outs = [k for k in tensor_names if k in written]
    if not outs:
        raise KernelError(f"{fn.__name__}: the kernel neither returns a tensor nor writes a "
                          "tensor argument: a custom call needs an output", def_loc(fn))
    ins_ = [k for k in tensor_names if k not in written or k in read]
    return ins_, [{"param": k, "shape": list(params[k].shape),
                   "dtype": dtype_name(params[k].dtype)} for k in outs], True


def _kernel_ref(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    return {"module": getattr(fn, "__module__", None),
            "qualname": getattr(fn, "__qualname__", getattr(fn, "__name__", None)),
            "file": code.co_filename if code is not None else None}


#: The fields of a backend config and the JSON types they hold.
_FIELDS = {"kernel": dict, "func_name": str, "grid": list, "inputs": list, "params": list,
           "outputs": list, "output_args": bool}


def _check_fields(cfg: dict[str, Any]) -> None:
    """KernelError unless ``cfg`` has every field, of its type, and params that name
    themselves (a hand-edited or damaged config fails here, not with a KeyError)."""
    for field, kind in _FIELDS.items():
        if not isinstance(cfg.get(field), kind):
            raise KernelError(expected(f"backend_config field {field!r}",
                                       f"a JSON {kind.__name__}", repr(cfg.get(field))[:60]),
                              loc=caller_loc())
    for p in cfg["params"]:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or (
                "value" not in p and not ({"shape", "dtype"} <= set(p))):
            raise KernelError(expected("backend_config param", "an object with a name and a "
                                       "value, or a shape and a dtype", repr(p)[:60]),
                              loc=caller_loc())


@public_entry
def run_backend_config(backend_config: str, *operands: Any) -> tuple[np.ndarray, ...]:
    """Execute the custom call ``backend_config`` describes on ``operands`` (numpy arrays, in
    the order of its input names): its output arrays, in the order of its output names.

    Raises:
        KernelError: a config that is not ours, or operands whose count, shapes or dtypes
            differ from those the config was specialised to.
    """
    try:
        cfg = json.loads(backend_config)
    except (TypeError, ValueError) as e:
        found = f"{str(backend_config)[:40]!r} ({e})"
        raise KernelError(expected("backend_config", "the JSON of FrameworkKernel.dump_config",
                                   found), loc=caller_loc()) from None
    if not isinstance(cfg, dict) or cfg.get("format") != CONFIG_FORMAT:
        raise KernelError(expected("backend_config format", CONFIG_FORMAT,
                                   repr(cfg.get("format") if isinstance(cfg, dict) else cfg)),
                          loc=caller_loc())
    _check_fields(cfg)
    fn = load_kernel(cfg["kernel"])
    if len(operands) != len(cfg["inputs"]):
        raise KernelError(expected(f"{cfg['func_name']}: custom call operands",
                                   f"{len(cfg['inputs'])} ({', '.join(cfg['inputs'])})",
                                   str(len(operands))), loc=caller_loc())
    given = dict(zip(cfg["inputs"], operands))
    call: dict[str, Any] = {}
    outs: list[np.ndarray] = []
    for p in cfg["params"]:
        name = p["name"]
        if "value" in p:
            call[name] = p["value"]
            continue
        want = (tuple(p["shape"]), to_dtype(p["dtype"], "backend_config dtype"))
        if name in given:
            arr = np.array(given[name], copy=True)
            if (arr.shape, arr.dtype) != want:
                raise KernelError(expected(f"{cfg['func_name']}: operand {name!r}",
                                           f"shape {list(want[0])} {p['dtype']} (the config is "
                                           "specialised to it)",
                                           f"shape {list(arr.shape)} {dtype_name(arr.dtype)}"),
                                  loc=caller_loc())
        else:
            arr = np.zeros(*want)
        call[name] = arr
    res = simulate_launch(fn, (), call, grid=tuple(cfg["grid"]), timing=False,
                          entry="nki.FrameworkKernel")
    if cfg["output_args"]:
        outs = [call[o["param"]] for o in cfg["outputs"]]
    else:
        outs = list(res.outputs)
    return tuple(outs)
