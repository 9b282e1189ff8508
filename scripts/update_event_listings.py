"""Rewrite the stored event listings (tests/timing/event_listings/*.csv.gz).

    python scripts/update_event_listings.py          # every case
    python scripts/update_event_listings.py NAME ... # only these listings

The listings (engine, opcode, start, end of every event of every sample kernel; see
tests/event_listings.py) guard the simulator's speed work: a change that makes the simulator
faster must leave them exactly as they are, and tests/timing/test_event_listings.py fails
when it does not. Only a modelling change (a change of what the timing model estimates) may
update them, and the commit that does must say so: name the modelling change and the listings
it moved. Never run this to make a speed change pass.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another installed copy
sys.path.insert(0, str(ROOT / "tests"))

import event_listings  # noqa: E402


def main(only: list[str]) -> int:
    """Rewrite the listings (all, or those named in ``only``); return the exit status."""
    seen = set()
    for name, run in event_listings.cases():
        if only and name not in only:
            continue
        seen.add(name)
        text = event_listings.listing_text(run())
        old = (event_listings.read_listing(name) if event_listings.path_of(name).exists()
               else None)
        event_listings.write_listing(name, text)
        state = "new" if old is None else ("unchanged" if old == text else "CHANGED")
        print(f"{name}: {text.count(chr(10)) - 1} events, {state}")
    wanted = {name for name, _ in event_listings.cases()}
    for stale in sorted(event_listings.LISTING_DIR.glob("*.csv.gz")):
        stem = stale.name[:-len(".csv.gz")]
        if not only and stem not in wanted:
            stale.unlink()
            print(f"{stem}: no such case any more, removed")
    for name in sorted(set(only) - seen):
        print(f"{name}: no such listing")
    return 1 if set(only) - seen else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
