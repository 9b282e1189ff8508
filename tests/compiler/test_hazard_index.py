"""The bucketed index of live accesses (compiler/schedule.py ``_LiveAccesses``) finds exactly the
edges of the plain rule: one list of live accesses per tensor, every overlap an edge, a write
dropping the accesses it covers. Random rectangles on tensors of every bucket geometry (many
row buckets, block columns, wide rows), compared step by step."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from neuroncore_sim.compiler.schedule import RAW, WAR, WAW, _LiveAccesses

# (rows, columns, block width or 0) of the tensors the accesses touch
TENSORS = [(128, 2048, 0), (2048, 1024, 0), (128, 8192, 512), (4096, 100_000, 0), (1, 64, 8),
           (128, 65536, 32), (1024, 4096, 16)]  # (blocks past 64 column buckets: one each)


class _Plain:
    """The rule without an index: one list of live (rows, cols, id) per tensor."""

    def __init__(self) -> None:
        self.writes: dict[int, list] = {}
        self.reads: dict[int, list] = {}

    def read(self, tid, r, c, me, found, hits):
        for (wr, wc, j) in self.writes.get(tid, ()):
            if _overlap(r, wr) and _overlap(c, wc) and j != me:
                found[j] = RAW
                hits.append(j)
        self.reads.setdefault(tid, []).append((r, c, me))

    def write(self, tid, r, c, me, found):
        for kind, table in ((WAW, self.writes), (WAR, self.reads)):
            keep = []
            for (er, ec, j) in table.get(tid, ()):
                if j != me and _overlap(r, er) and _overlap(c, ec):
                    found[j] = min(found.get(j, kind), kind)
                if not (r[0] <= er[0] and er[1] <= r[1] and c[0] <= ec[0] and ec[1] <= c[1]):
                    keep.append((er, ec, j))
            table[tid] = keep
        self.writes.setdefault(tid, []).append((r, c, me))

    def touching(self, tid, c_lo, c_hi, found):
        for kind, table in ((WAW, self.writes), (WAR, self.reads)):
            for (_, ec, j) in table.get(tid, ()):
                if _overlap((c_lo, c_hi), ec):
                    found[j] = min(found.get(j, kind), kind)


def _overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@st.composite
def steps(draw):
    out = []
    for _ in range(draw(st.integers(1, 60))):
        tid = draw(st.integers(0, len(TENSORS) - 1))
        rows, cols, _ = TENSORS[tid]
        r0 = draw(st.integers(0, rows - 1))
        r1 = draw(st.integers(r0 + 1, min(rows, r0 + draw(st.sampled_from([1, 128, rows])))))
        c0 = draw(st.integers(0, cols - 1))
        c1 = draw(st.integers(c0 + 1, min(cols, c0 + draw(st.sampled_from([1, 64, 512, cols])))))
        out.append((draw(st.sampled_from(["read", "write", "touching"])), tid, (r0, r1),
                    (c0, c1)))
    return out


@settings(max_examples=300, deadline=None, derandomize=True)
@given(steps())
def test_bucketed_index_finds_the_plain_rule_edges(seq) -> None:
    index, plain = _LiveAccesses(), _Plain()
    for me, (op, tid, r, c) in enumerate(seq):
        rows, cols, block = TENSORS[tid]
        region = (tid, rows, cols, block, r[0], r[1], c[0], c[1])
        got, want = {}, {}
        if op == "read":
            got_hits, want_hits = [], []
            index._read(region, me, got, got_hits)
            plain.read(tid, r, c, me, want, want_hits)
            assert sorted(set(got_hits)) == sorted(set(want_hits))
        elif op == "write":
            index._write(region, me, got)
            plain.write(tid, r, c, me, want)
        else:
            index.touching(tid, c[0], c[1], got)
            plain.touching(tid, c[0], c[1], want)
        assert got == want, (op, tid, r, c)


def test_pop_all_gives_every_live_access_once() -> None:
    """A tile whose slot is taken: every live access of its tensor becomes a wait (WAW from
    writes, WAR from reads, the stronger kind when both), and the tensor is forgotten."""
    index = _LiveAccesses()
    wide = (1, 4096, 100_000, 0)
    index._write(wide + (0, 4096, 0, 100_000), 0, {})  # spans every bucket
    index._read(wide + (0, 128, 0, 10), 1, {}, [])
    index._read(wide + (3000, 3100, 99_000, 99_999), 2, {}, [])
    index._write(wide + (0, 1, 0, 1), 2, {})
    found: dict[int, int] = {}
    index.pop_all(1, found)
    assert found == {0: WAW, 1: WAR, 2: WAW}
    again: dict[int, int] = {}
    index.pop_all(1, again)
    assert again == {}
