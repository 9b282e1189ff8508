"""Issue 19 item 1: every public function of ``nl``, ``nisa`` and ``ncc``, called inside a kernel
with arguments of wrong types and values, raises only SimulatorError subclasses (Python's own
arity TypeError at the call site excepted): never a TypeError, AttributeError, IndexError,
KeyError or ValueError from inside the package."""

from __future__ import annotations

import traceback
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neuroncore_sim.nki.compiler as ncc
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
from neuroncore_sim.config import TRN1
from neuroncore_sim.errors import SimulatorError
from neuroncore_sim.frontend import tracer as _tracer
from neuroncore_sim.program.ir import Program

MODULES = {"nl": nl, "nisa": nisa, "ncc": ncc, "ncc.sbuf": ncc.sbuf, "ncc.psum": ncc.psum}
FUNCTIONS = sorted(f"{m}.{n}" for m, mod in MODULES.items() for n in dir(mod)
                   if not n.startswith("_") and callable(getattr(mod, n))
                   and not isinstance(getattr(mod, n), type))
KEYWORDS = ("dtype", "mask", "axis", "engine", "op", "keepdims", "buffer", "scale", "bias",
            "name", "reduce_res")


def _pool() -> list:
    """Arguments of every kind a kernel might pass by mistake (made inside a kernel)."""
    tile = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    i = nl.arange(4)[None, :]
    return [None, 0, -1, 3, 10 ** 12, 2.5, float("nan"), "x", [1, 2], (128, 4), (),
            np.zeros(3), object(), {}, True, slice(0, 2), tile,
            nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm),
            nl.ndarray((128, 4), dtype=nl.int32, buffer=nl.sbuf),
            nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.psum),
            nl.ndarray((1, 4), dtype=nl.bfloat16, buffer=nl.sbuf),
            nl.ndarray((128, 2, 3), dtype=nl.float32, buffer=nl.sbuf),
            i, i < 2, nl.float32, nl.int8, np.add, np.exp, nl.add, nisa.vector_engine]


POOL_SIZE = 30  # len(_pool()); checked below


@pytest.mark.parametrize("qualname", FUNCTIONS)
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.integers(0, POOL_SIZE - 1), max_size=4),
       keyword=st.one_of(st.none(), st.tuples(st.sampled_from(KEYWORDS),
                                              st.integers(0, POOL_SIZE - 1))))
def test_wrong_arguments_raise_only_simulator_errors(qualname, picks, keyword):
    module, name = qualname.rsplit(".", 1)
    fn = getattr(MODULES[module], name)
    tr = _tracer.Tracer(Program(name="fuzz"), TRN1, None, None)
    with tr.active(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr.start_instance(0, ())
        pool = _pool()
        assert len(pool) == POOL_SIZE
        args = [pool[k] for k in picks]
        kwargs = {keyword[0]: pool[keyword[1]]} if keyword else {}
        try:
            fn(*args, **kwargs)
        except SimulatorError:
            pass
        except TypeError as e:  # only an arity error raised by the call itself
            frames = traceback.extract_tb(e.__traceback__)
            assert len(frames) == 1, f"{qualname}: TypeError from inside: {frames[-1]}: {e}"
