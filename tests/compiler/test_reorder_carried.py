"""Loops that carry an accumulation keep their iterations' order (compiler/reorder.py): the
scheduler interleaves independent ``affine_range`` iterations, but an engine's read-modify-write
into one tile across iterations (``acc[...] += x``) is a loop-carried dependency, so that loop's
iterations keep their program order on each engine. A matmul accumulating in PSUM is not one
(PSUM adds what it is written; no engine reads the sum back)."""

from __future__ import annotations

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.compiler.reorder import carried_loops
from neuroncore_sim.config import TRN1

N = 8


@nki.jit
def summed_products(x, y):
    """Per iteration a product and a square root of it (independent of other iterations), then
    ``acc += root``: the loop carries the sum."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
    xs, ys = nl.load(x), nl.load(y)  # (all loaded first: the engines' order is the schedule's)
    for i in nl.affine_range(N):
        p = nisa.tensor_tensor(xs[:, i * 512:(i + 1) * 512], ys[:, i * 512:(i + 1) * 512],
                               op=nl.multiply)
        acc[...] += nisa.tensor_scalar(p, op0=nl.multiply, operand0=2.0,
                                          engine=nisa.vector_engine)
    nl.store(out, value=acc)
    return out


@nki.jit
def separate_products(x, y):
    """The same work, each iteration storing its own result: nothing is carried."""
    out = nl.ndarray((N, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    xs, ys = nl.load(x), nl.load(y)
    for i in nl.affine_range(N):
        p = nisa.tensor_tensor(xs[:, i * 512:(i + 1) * 512], ys[:, i * 512:(i + 1) * 512],
                               op=nl.multiply)
        nl.store(out[i], value=nisa.tensor_scalar(p, op0=nl.multiply, operand0=2.0,
                                          engine=nisa.vector_engine))
    return out


@nki.jit
def matmul_sum(a, b):
    """Per iteration a copy on VectorE feeding a matmul that accumulates in PSUM."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(N):
        s = nisa.tensor_copy(nl.load(a[i]), engine=nisa.vector_engine)
        acc += nisa.nc_matmul(s, nl.load(b[i]))
    nl.store(out, value=nl.copy(acc))
    return out


ARGS = nt.tensor[[128, N * 512], nl.float32], nt.tensor[[128, N * 512], nl.float32]


def _vector_stream(kernel, *args) -> tuple[list[int], list[int]]:
    prog = ncs.simulate(kernel, *args, functional=False).program
    inst = compile_program(prog, TRN1).instances[0]
    by_id = {ins.id: ins for ins in inst.instructions}
    return [i for i in inst.queues["vector"] if by_id[i].loops], \
        sorted(i for i in inst.queues["vector"] if by_id[i].loops)


def test_a_loop_carrying_a_sum_keeps_its_order_on_each_engine():
    prog = ncs.simulate(summed_products, *ARGS, functional=False).program
    assert len(carried_loops(list(prog.instructions))) == 1
    stream, in_order = _vector_stream(summed_products, *ARGS)
    assert stream == in_order


def test_independent_iterations_are_interleaved():
    prog = ncs.simulate(separate_products, *ARGS, functional=False).program
    assert not carried_loops(list(prog.instructions))
    stream, in_order = _vector_stream(separate_products, *ARGS)
    assert stream != in_order


def test_a_psum_accumulation_carries_nothing():
    args = nt.tensor[[N, 128, 128], nl.bfloat16], nt.tensor[[N, 128, 512], nl.bfloat16]
    prog = ncs.simulate(matmul_sum, *args, functional=False).program
    assert not carried_loops(list(prog.instructions))


@nki.jit
def column_sums(x):
    """Each iteration adds into its own column of one tile: different regions, nothing is
    carried from one iteration to the next."""
    out = nl.ndarray((128, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((nl.par_dim(128), N), dtype=nl.float32, buffer=nl.sbuf)
    xs = nl.load(x)
    for i in nl.affine_range(N):
        acc[:, i:i + 1] += nisa.tensor_reduce(nl.add, xs[:, i * 512:(i + 1) * 512], axis=[1],
                                              keepdims=True)
    nl.store(out, value=acc)
    return out


def test_accumulating_into_a_column_each_carries_nothing():
    prog = ncs.simulate(column_sums, ARGS[0], functional=False).program
    assert not carried_loops(list(prog.instructions))
