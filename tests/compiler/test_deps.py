"""The packed dependency edges of a schedule (compiler/deps.py) read as the mapping they replace:
instruction id -> ((producer id, kind), ...)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from neuroncore_sim.compiler.deps import KIND_BITS, KIND_MASK, Deps
from neuroncore_sim.compiler.schedule import RAW, WAR, WAW

_found = st.dictionaries(st.integers(0, 1 << 40), st.sampled_from((RAW, WAW, WAR)),
                         min_size=1, max_size=40)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.dictionaries(st.integers(0, 1 << 30), _found, max_size=8))
def test_packed_edges_read_as_sorted_pairs(table):
    deps = Deps()
    for iid, found in table.items():
        deps.add(iid, found)
    want = {iid: tuple(sorted(found.items())) for iid, found in table.items()}
    assert deps == want and dict(deps) == want and len(deps) == len(want)
    for iid, found in table.items():
        taken = [(e >> KIND_BITS, e & KIND_MASK) for e in deps.take(iid)]
        assert tuple(taken) == want[iid] and iid not in deps  # taken once, then dropped
    assert list(deps.take(12345)) == [] and len(deps) == 0


def test_edges_set_as_a_mapping_keep_their_order():
    deps = Deps({3: ((2, WAR), (1, RAW))})
    deps[4] = ()
    assert deps[3] == ((2, WAR), (1, RAW)) and deps[4] == () and list(deps.take(4)) == []
    del deps[3]
    assert deps == {} and repr(deps) == "Deps({})"
