"""Every sample kernel's events equal its stored listing, exactly (tests/event_listings.py).

A speed change of the simulator must leave every event where it was; only a modelling change
may rewrite the listings (scripts/update_event_listings.py), saying so in its commit.
"""

from __future__ import annotations

import difflib

import pytest

import event_listings

CASES = dict(event_listings.cases())


@pytest.mark.parametrize("name", sorted(CASES))
def test_events_equal_stored_listing(name: str) -> None:
    path = event_listings.path_of(name)
    assert path.exists(), (f"no stored listing {path.name}: run "
                           "scripts/update_event_listings.py (a modelling change only)")
    stored = event_listings.read_listing(name)
    now = event_listings.listing_text(CASES[name]())
    if now != stored:
        diff = list(difflib.unified_diff(stored.splitlines(), now.splitlines(), "stored",
                                         "now", n=1, lineterm=""))
        pytest.fail(f"events of {name} differ from {path.name} "
                    f"({len(diff)} diff lines; first ones):\n" + "\n".join(diff[:30]))


def test_every_listing_has_a_case() -> None:
    """No stale file: a listing whose case is gone would guard nothing."""
    stored = {p.name[:-len(".csv.gz")] for p in event_listings.LISTING_DIR.glob("*.csv.gz")}
    assert stored == set(CASES)


def test_listing_reads_back_exactly() -> None:
    """The text format keeps every float bit for bit (repr round-trips)."""
    class E:  # one event with times that do not print short
        instance, instr_id, engine, opcode = 0, 3, "vector", "tensor_copy"
        start_ns, end_ns = 0.1 + 0.2, 1 / 3

    class T:
        events = (E,)

    text = event_listings.listing_text(T)
    start, end = text.splitlines()[1].split(",")[-2:]
    assert float(start) == 0.1 + 0.2 and float(end) == 1 / 3
    assert start != "0.3"
