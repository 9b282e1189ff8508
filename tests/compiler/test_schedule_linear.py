"""The schedule's dependency edges grow linearly with the kernel (issue 16): the edges each
added instruction brings stay flat as a kernel grows, whatever its access pattern. A tile read
many times after taking a reused buffer slot used to carry all the slot's previous accesses to
every reader (edges quadratic in the reads of a long scan)."""

from __future__ import annotations

import pytest

import event_listings
import neuroncore_sim as ncs
from neuroncore_sim.config import load_config
from neuroncore_sim.compiler.passes import compile_program

#: (kernel file, kernel, three sizes, each about twice the instructions of the one before)
CASES = [
    # two channel tiles: the second reuses the first's slots, then its delta tile is read by
    # every state of every chunk (the old rule gave 2.9 then 15 edges per added instruction)
    ("mamba", "mamba_v3", [{"channels": 256, "seq_len": n, "state_size": 4}
                           for n in (2048, 4096, 8192)]),
    ("flash_attention", "kernel", [{"seq_q": 256, "seq_k": n} for n in (1024, 2048, 4096)]),
    ("matmul_ladder", "blocked_all", [{"M": 512, "K": k, "N": 1024} for k in (1024, 2048, 4096)]),
]


def _edges(stem: str, kname: str, sizes: dict) -> tuple[int, int]:
    """(dependency edges, instructions) of one kernel's schedule."""
    module = event_listings.load_sample(stem)
    kernel = getattr(module, "KERNELS", {"kernel": getattr(module, "kernel", None)})[kname]
    program = ncs.trace(kernel, **module.example_inputs(**sizes), functional=False).program
    schedule = compile_program(program, load_config(None))
    return (sum(len(d) for inst in schedule.instances for d in inst.deps.values()),
            len(program.instructions))


@pytest.mark.parametrize("stem, kname, sizes", CASES, ids=[c[0] for c in CASES])
def test_edges_per_added_instruction_stay_flat(stem: str, kname: str, sizes: list) -> None:
    (e1, n1), (e2, n2), (e3, n3) = (_edges(stem, kname, s) for s in sizes)
    assert n1 < n2 < n3
    first, second = (e2 - e1) / (n2 - n1), (e3 - e2) / (n3 - n2)
    assert second <= 1.25 * first, (first, second)
