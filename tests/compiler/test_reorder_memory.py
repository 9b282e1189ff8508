"""The list scheduler keeps every memory within capacity as it interleaves iterations
(compiler/reorder.py): an engine whose producer is fast (TensorE) must not run so far ahead of
its slow readers (ScalarE) that the tiles it opens outgrow PSUM; the schedule it makes then
spills nothing where the kernel's own order spills nothing."""

from __future__ import annotations

import neuroncore_sim as ncs
import neuroncore_sim.nki as nki
import neuroncore_sim.nki.isa as nisa
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.compiler.reorder import memory_demand, reorder
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.program.ir import MemSpace

TILES, BLOCKS = 16, 4


@nki.jit
def fast_producer_slow_reader(q, k):
    """Per row tile, BLOCKS matmuls of one PSUM bank each, each read by an exp on ScalarE that
    takes twice the matmul's time; the exps of one tile accumulate into one sum."""
    out = nl.ndarray((TILES * 128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    kt = nl.load(k)
    for i in nl.affine_range(TILES):
        qt = nl.load(q[:, i * 128:(i + 1) * 128])
        total = nl.zeros((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.sequential_range(BLOCKS):
            scores = nisa.nc_matmul(qt, kt[:, j * 512:(j + 1) * 512])
            e = nisa.activation(op=nl.exp, data=scores, reduce_op=nl.add,
                                reduce_res=total, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nl.store(out[i * 128:(i + 1) * 128, :], value=total)
    return out


ARGS = nt.tensor[[128, TILES * 128], nl.bfloat16], nt.tensor[[128, BLOCKS * 512], nl.bfloat16]


def test_the_interleaved_stream_keeps_psum_tiles_within_its_banks():
    prog = ncs.simulate(fast_producer_slow_reader, *ARGS, functional=False).program
    stream = reorder(list(prog.instructions), TRN1)
    _, _, live_peak = memory_demand(stream, TRN1)
    assert live_peak[MemSpace.PSUM] <= TRN1.psum_bytes_per_partition
    inst = compile_program(prog, TRN1).instances[0]
    assert [ins.id for ins in inst.instructions] != sorted(ins.id for ins in inst.instructions)


def test_it_spills_nothing():
    res = ncs.simulate(fast_producer_slow_reader, *ARGS, functional=False)
    mem = res.summary()["memory"]
    assert mem["psum"]["spill_save_bytes"] == 0 and mem["sbuf"]["spill_save_bytes"] == 0
    assert mem["psum"]["peak_bytes_per_partition"] <= TRN1.psum_bytes_per_partition
