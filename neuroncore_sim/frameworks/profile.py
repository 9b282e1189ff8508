"""Per-model profiles: every kernel launch a framework program makes, with its layer, call
site, shapes and estimated device time, and totals per kernel and per layer.

    with ncs.profile_session() as s:
        loss = train_step(params, x)
    print(s.table())

Built on :func:`neuroncore_sim.simulate.record_launches`, which times every launch made inside
it whatever the entry point; this module only adds where each launch came from:

* call site: the first frame outside neuroncore_sim, jax and torch when the launch is made; for
  a kernel inside ``jax.jit`` (which runs later, from XLA) the line that called the kernel
  while jax traced the function (jax_ops passes it down);
* layer: the names of the open :func:`layer` blocks (``with ncs.layer("attention"): ...``),
  else jax's ``jax.named_scope`` names, else the torch modules whose forward is running (with
  ``profile_session(model=m)`` named as in ``m.named_modules()``), else the call site's function.
  A launch in the backward of a ``torch.autograd.Function`` (run by autograd after every
  forward has returned) gets the layer in which the same Function's forward made its launches
  (``LaunchRecord.backward`` is True; torch_layers.py), else the Function's graph node
  (``MatMulBackward``).

Host time is the wall time of the block: on the CPU it includes the simulator's own work, so
it says how long the run took here, not on a device.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..result import SimResult
from ..simulate import record_launches
from .torch_layers import autograd_origin, torch_layers, torch_module_layer

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package
_SKIP = (_HERE, os.sep + "jax" + os.sep, os.sep + "jaxlib" + os.sep, os.sep + "torch" + os.sep,
         os.sep + "contextlib.py", os.sep + "threading.py")

_LAYERS: ContextVar[tuple[str, ...]] = ContextVar("neuroncore_sim_layers", default=())
#: Per thread: (layer, call site) a framework adapter sets for the launch it is about to make.
_PENDING = threading.local()


@contextlib.contextmanager
def layer(name: str) -> Iterator[None]:
    """Name the launches made inside this block (nested blocks join with "/")."""
    token = _LAYERS.set(_LAYERS.get() + (str(name),))
    try:
        yield
    finally:
        _LAYERS.reset(token)


def current_layer() -> str | None:
    """The open :func:`layer` names, else jax's named scope, else the torch modules running."""
    names = _LAYERS.get()
    if names:
        return "/".join(names)
    jax_scope = _jax_name_stack()
    if jax_scope:
        return jax_scope
    return torch_module_layer()


def _jax_name_stack() -> str | None:
    if "jax" not in sys.modules:
        return None
    try:  # jax's own name stack (jax.named_scope) has no public reader: guarded
        from jax._src import source_info_util
        text = str(source_info_util.current_name_stack())
    except (ImportError, AttributeError):
        return None
    # Drop jax's transformation tags (jit(...), jvp(...)) and keep the user's scopes.
    parts = [p for p in text.split("/") if p and "(" not in p]
    return "/".join(parts) or None


def call_site() -> tuple[str | None, str | None]:
    """``(file.py:LINE, function)`` of the first frame outside this package and the frameworks."""
    frame = sys._getframe(1)
    while frame is not None and any(s in frame.f_code.co_filename for s in _SKIP):
        frame = frame.f_back
    if frame is None:
        return None, None
    func = frame.f_code.co_name
    ctx = frame.f_locals.get("ctx") if func == "backward" else None
    if ctx is not None:  # a torch.autograd.Function's backward: its node, "MatMulBackward"
        func = type(ctx).__name__
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}", func


@contextlib.contextmanager
def launch_origin(layer_name: str | None, site: str | None) -> Iterator[None]:
    """For framework adapters: the launches this thread makes inside the block come from
    ``layer_name`` at ``site`` (captured when the framework traced the call)."""
    old = getattr(_PENDING, "origin", None)
    _PENDING.origin = (layer_name, site)
    try:
        yield
    finally:
        _PENDING.origin = old


@dataclass
class LaunchRecord:
    """One kernel launch of a profile session."""

    kernel: str
    layer: str
    site: str | None
    shapes: list[tuple[int, ...]]
    device_ns: float
    result: SimResult = field(repr=False)
    #: Made in the backward of a torch.autograd.Function (autograd, after the forward).
    backward: bool = False


class _OriginList(list):
    """The launch list of a record_launches block, noting where each launch came from as
    simulate_launch appends it (the launching thread's stack is live then)."""

    def __init__(self) -> None:
        super().__init__()
        self.origins: list[tuple[str | None, str | None, bool]] = []
        self._lock = threading.Lock()  # launches from several threads: keep the pairs aligned

    def append(self, res: SimResult) -> None:
        origin = getattr(_PENDING, "origin", None)
        backward = False
        if origin is not None:
            layer_name, site = origin
        else:
            site, func = call_site()
            # A torch Function's backward launch takes the layer its forward launched in.
            layer_name, backward = autograd_origin(current_layer())
            layer_name = layer_name or func
        with self._lock:
            self.origins.append((layer_name, site, backward))
            super().append(res)


class ProfileSession:
    """What :func:`profile_session` collects; ``launches`` grows while the block runs."""

    def __init__(self, results: _OriginList) -> None:
        self._results = results
        self.host_ns: float = 0.0
        #: the record_launches block behind the session (its ``skipped`` launch count)
        self.recorder: Any = None

    @property
    def results(self) -> list[SimResult]:
        """The launches' SimResults so far, in order."""
        with self._results._lock:
            return list(self._results)

    @property
    def launches(self) -> list[LaunchRecord]:
        """Every launch so far, in order."""
        with self._results._lock:
            results, origins = list(self._results), list(self._results.origins)
        # Kernels are named by function; two kernels of one name (every sample kernel is
        # "kernel") are told apart by their file: "rmsnorm.kernel".
        files: dict[str, set[str | None]] = {}
        for res in results:
            files.setdefault(res.program.name, set()).add(res.kernel_loc)
        out = []
        for res, (layer_name, site, backward) in zip(results, origins):
            name = res.program.name
            if len(files[name]) > 1 or (name == "kernel" and res.kernel_loc):
                name = f"{str(res.kernel_loc).split('.py:')[0]}.{name}"
            shapes = [tuple(t.shape) for t in res.program.tensors if t.kind == "input"]
            out.append(LaunchRecord(name, layer_name or "?", site, shapes,
                                    float(res.latency_ns), res, backward))
        return out

    @property
    def device_ns(self) -> float:
        """Sum of the launches' estimated device times."""
        return sum(r.device_ns for r in self.launches)

    def _totals(self, key: str) -> list[tuple[str, int, float]]:
        acc: dict[str, list[float]] = {}
        for r in self.launches:
            acc.setdefault(getattr(r, key), []).append(r.device_ns)
        return [(k, len(v), sum(v)) for k, v in acc.items()]

    def by_kernel(self) -> list[tuple[str, int, float]]:
        """``(kernel, calls, total device ns)`` in order of first launch."""
        return self._totals("kernel")

    def by_layer(self) -> list[tuple[str, int, float]]:
        """``(layer, calls, total device ns)`` in order of first launch."""
        return self._totals("layer")

    def table(self) -> str:
        """The launches, the per-kernel and per-layer totals, and device vs host time."""
        lines = [f"{'#':>3}  {'kernel':<26} {'layer':<24} {'call site':<32} "
                 f"{'device us':>10}  shapes"]
        for i, r in enumerate(self.launches):
            shapes = " ".join("x".join(map(str, s)) for s in r.shapes)
            site = str(r.site)[-32:]  # keep the line number when the file name is long
            layer_name = f"{r.layer[-18:]} (bwd)" if r.backward else r.layer[-24:]
            lines.append(f"{i:>3}  {r.kernel[-26:]:<26} {layer_name:<24} {site:<32} "
                         f"{r.device_ns / 1e3:>10.2f}  {shapes}")
        return "\n".join(lines) + "\n" + self.totals_text()

    def totals_text(self, distinct: int | None = None) -> str:
        """The per-kernel and per-layer totals, and device vs host time (``distinct``: how
        many of the launches were distinct, said when given)."""
        lines = []
        for title, rows in (("kernel", self.by_kernel()), ("layer", self.by_layer())):
            lines.append("")
            lines.append(f"{'per ' + title:<32} {'calls':>6} {'device us':>12}")
            lines.extend(f"{k[-32:]:<32} {n:>6} {ns / 1e3:>12.2f}" for k, n, ns in rows)
        lines.append("")
        of = f" ({distinct} distinct)" if distinct is not None else ""
        lines.append(f"device total {self.device_ns / 1e3:.2f} us (estimated) over "
                     f"{len(self.launches)} launches{of}; host time {self.host_ns / 1e6:.1f} ms")
        return "\n".join(lines)


@contextlib.contextmanager
def profile_session(config: Any = None, functional: bool = True, model: Any = None,
                    progress: Any = False, reuse_timing: bool = False,
                    max_distinct: int | None = None) -> Iterator[ProfileSession]:
    """Record every kernel launch made inside the block (see the module's docstring).

    Args:
        config: hardware config for the launches (default trn1), as in record_launches.
        functional: False times the launches without values (outputs are None; only for
            programs that do not use them).
        model: a ``torch.nn.Module`` whose submodules name the layers of its launches.
        progress: progress bars for each launch, as in :func:`neuroncore_sim.simulate`.
        reuse_timing, max_distinct: time identical launches once, and profile at most
            ``max_distinct`` distinct ones (:mod:`neuroncore_sim.launches`;
            ``neuroncore-sim run`` uses both).
    """
    with record_launches(config=config, functional=functional, progress=progress,
                         reuse_timing=reuse_timing, max_distinct=max_distinct) as rec:
        rec.results = _OriginList()
        session = ProfileSession(rec.results)
        session.recorder = rec
        start = time.perf_counter_ns()
        with torch_layers(model):
            try:
                yield session
            finally:
                session.host_ns = float(time.perf_counter_ns() - start)
