"""Arguments NKI would not take are clear errors, not silently dropped or read by truthiness.

- ``nl`` element-wise functions, reductions, ``nl.copy`` / ``transpose`` / ``matmul`` /
  ``dropout`` / ``gather_flattened`` / ``atomic_rmw`` / ``device_print`` / ``loop_reduce`` take
  the keywords they name plus ``name=`` (a label, as ``nisa`` instructions do); any other keyword is
  a KernelError listing the accepted ones (frontend/api_keywords.py ``known_keywords``).
- A flag (a parameter whose default is True or False) takes a bool (or numpy bool); anything
  else is a KernelError, in ``nl`` and ``nisa`` alike.
- A launch grid of more than 2**20 instances is refused before anything is traced.
- ``nl.store`` of a PSUM tile copies it to SBUF first, as its reference says.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import neuroncore_sim as ncs
from neuroncore_sim import nki
from neuroncore_sim.errors import KernelError
from neuroncore_sim.program.ir import Opcode
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl

HERE = "test_call_argument_checks.py"
RNG = np.random.default_rng(9)
F32 = np.float32


def store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out


def bad_line(kernel) -> int:
    src, start = inspect.getsourcelines(kernel)
    return start + next(i for i, s in enumerate(src) if "# BAD" in s)


def test_documented_keywords_name_and_numpy_bools_are_taken():
    def kernel(a):
        x = nl.load(a)
        e = nl.exp(x, dtype=nl.float32, name="e")
        s = nl.add(e, 1.0, mask=None, name="plus_one")
        r = nl.sum(s, axis=1, keepdims=np.bool_(True), name="rows")
        m = nl.matmul(x, x, transpose_x=np.bool_(True))
        t = nisa.tensor_reduce(np.max, x, axis=1, keepdims=np.bool_(True), name="mx")
        return store(r), store(nl.copy(m, name="m")), store(t)

    a = RNG.random((64, 64), dtype=F32)
    out = ncs.trace(kernel, a).outputs
    np.testing.assert_allclose(out[0], (np.exp(a) + 1).sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(out[1], a.T @ a, rtol=1e-4)
    np.testing.assert_array_equal(out[2], a.max(1, keepdims=True))


def _unknown_keyword(a):
    nl.exp(nl.load(a), axis=1)  # BAD


def _unknown_keyword_binary(a):
    nl.multiply(nl.load(a), 2.0, scale=3.0)  # BAD


def _name_not_a_string(a):
    nl.exp(nl.load(a), name=7)  # BAD


def _keepdims_string(a):
    nl.sum(nl.load(a), axis=1, keepdims="yes")  # BAD


def _transpose_x_tile(a):
    x = nl.load(a)
    nl.matmul(x, x, transpose_x=x)  # BAD


def _nisa_flag_int(a):
    x = nl.load(a)
    nisa.nc_matmul(x, x, is_transpose=1)  # BAD


def _positional_flag(a):
    x = nl.load(a)
    nisa.tensor_scalar(x, np.add, 1.0, "no")  # BAD (reverse0, the fourth parameter)


def _dropout_keyword(a):
    nl.dropout(nl.load(a), 0.5, seed=3)  # BAD


@pytest.mark.parametrize("kernel,message", [
    (_dropout_keyword, r"nl\.dropout: unexpected keyword argument 'seed' \(it takes: x, rate, "
                       r"dtype, mask, name\)"),
    (_unknown_keyword, r"nl\.exp: unexpected keyword argument 'axis' \(it takes: x, dtype, "
                       r"mask, name\)"),
    (_unknown_keyword_binary, r"nl\.multiply: unexpected keyword argument 'scale' \(it takes: "
                              r"x, y, dtype, mask, name\)"),
    (_name_not_a_string, r"nl\.exp: name= expected a string, found int"),
    (_keepdims_string, r"nl\.sum: keepdims= expected True or False, found 'yes' \(str\)"),
    (_transpose_x_tile, r"nl\.matmul: transpose_x= expected True or False, found a value "
                        r"\(NkiTensor\)"),
    (_nisa_flag_int, r"nisa\.nc_matmul: is_transpose= expected True or False, found 1 \(int\)"),
    (_positional_flag, r"nisa\.tensor_scalar: reverse0= expected True or False, found 'no'"),
])
def test_misuse_is_a_kernel_error_at_its_line(kernel, message):
    with pytest.raises(KernelError, match=message) as info:
        ncs.trace(kernel, RNG.random((64, 64), dtype=F32))
    assert type(info.value) is KernelError
    assert info.value.loc == f"{HERE}:{bad_line(kernel)}"


def test_an_absurd_grid_is_refused_before_tracing():
    traced = []

    @nki.jit
    def kernel(a):
        traced.append(1)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out

    a = RNG.random((4, 4), dtype=F32)
    with pytest.raises(KernelError, match=r"grid \[1000000000\]: expected at most 1,048,576 "
                       r"SPMD instances, found 1,000,000,000") as info:
        kernel[10 ** 9](a)  # BAD
    assert info.value.loc == f"{HERE}:{inspect.currentframe().f_lineno - 1}"
    with pytest.raises(KernelError, match=r"found 2,097,152"):
        ncs.simulate(kernel, a, grid=(2048, 1024))
    assert traced == []
    np.testing.assert_array_equal(kernel[2, 2](a), a)  # a sane grid runs
    assert len(traced) == 4


def test_store_of_a_psum_tile_copies_it_to_sbuf_first():
    def kernel(a, b):
        out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.nc_matmul(nl.load(a), nl.load(b)))
        return out

    a, b = RNG.random((64, 32), dtype=F32), RNG.random((64, 16), dtype=F32)
    launch = ncs.trace(kernel, a, b)
    np.testing.assert_allclose(launch.outputs[0], a.T @ b, rtol=1e-5)
    ops = [i.opcode for i in launch.program.instructions]
    assert ops[-2:] == [Opcode.TENSOR_COPY, Opcode.DMA_COPY]
    assert launch.program.instructions[-1].srcs["src"].space.value == "sbuf"
