"""``TimingResult.instruction_end_ns`` (timing/end_times.py): the ends of a run's instructions,
one float per id, read as the ``Instruction.id -> end`` mapping it replaces."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings, strategies as st

from neuroncore_sim.timing.end_times import EndTimes, new_ends


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.dictionaries(st.integers(0, 40), st.floats(0, 1e9, allow_nan=False), max_size=20),
       st.integers(0, 5))
def test_reads_as_the_dict_of_the_instructions_that_ran(ran, spare):
    size = max(ran, default=-1) + 1 + spare
    ends = new_ends(size)
    for iid, t in ran.items():
        ends[iid] = t
    got = EndTimes(ends)
    assert got == ran and dict(got) == ran and len(got) == len(ran)
    assert sorted(got) == sorted(ran)
    for iid in range(-2, size + 2):
        assert (iid in got) == (iid in ran)
        assert got.get(iid) == ran.get(iid)
    for key in (True, 1.0, "1", None):  # not instruction ids: never found
        assert key not in got and got.get(key) is None
    with pytest.raises(KeyError):
        got[size]
    assert pickle.loads(pickle.dumps(got)) == ran


def test_a_timing_result_reads_ends_by_id():
    import numpy as np

    import neuroncore_sim as ncs
    import neuroncore_sim.nki as nki
    import neuroncore_sim.nki.language as nl

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(a)))
        return out

    res = ncs.simulate(kernel, np.ones((128, 64), np.float32), functional=False)
    ends = res.timing.instruction_end_ns
    ids = [ins.id for ins in res.program.instructions]
    assert sorted(ends) == ids and ends[ids[-1]] == res.latency_ns
    by_event = {}
    for e in res.timing.events:
        by_event[e.instr_id] = max(by_event.get(e.instr_id, 0.0), e.end_ns)
    assert all(ends[i] >= by_event[i] for i in ids)
