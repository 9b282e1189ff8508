"""The files ``--out DIR`` writes per launch, and the check of ``DIR`` before any work.

Each file is written to a temporary name in its folder and renamed into place when complete, so
an interrupted run leaves either the previous file or the new one, never half of one. The
output folder is checked (created, and written to once) before the simulation starts: a place
that cannot hold the files is a usage error at once, not after minutes of simulation.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from ..errors import SimulatorError

if TYPE_CHECKING:
    from ..result import SimResult


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


class OutputPlaceError(SimulatorError):
    """``--out`` names a place the files cannot be written to."""


def check_out_dir(out: Path, what: str = "--out") -> None:
    """Create ``out`` (and its parents) and check that a file can be written in it (``what``
    names the option or argument that gave it, for the message).

    Raises:
        OutputPlaceError: ``out`` is an existing file, or it cannot be created or written.
    """
    if out.exists() and not out.is_dir():
        raise OutputPlaceError(f"{what} {out}: expected a directory (it is created if missing), "
                               "found an existing file")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".ncs-write-check-"):
            pass
    except OSError as e:
        raise OutputPlaceError(f"{what} {out}: cannot write there ({e.strerror or e})") from e


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed to ``path`` when the block ends
    without an exception, removed otherwise."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # as open() would have made it (mkstemp makes 0600)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def launch_folder(out: Path, n: int, name: str) -> Path:
    """``out/launch<n>_<name>`` (the name made safe for a file system)."""
    return out / f"launch{n}_{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}"


def write_launch_files(res: "SimResult", folder: Path, trace_max_events: int | None = None
                       ) -> None:
    """``summary.json`` (with the advice), ``summary.txt``, ``events.csv``, ``trace.json`` and
    ``timeline.png`` of one launch in ``folder``, each written atomically."""
    from . import chrome_trace, plot
    from .advice import advice
    from .tables import full_text

    folder.mkdir(parents=True, exist_ok=True)
    summary = res.summary()
    summary["advice"] = [tip.as_dict() for tip in advice(res, summary)]
    writers: list[tuple[str, Callable[[Path], object]]] = [
        ("summary.json", lambda p: p.write_text(json.dumps(summary, indent=2) + "\n")),
        ("summary.txt", lambda p: p.write_text(full_text(res))),
        ("events.csv", lambda p: res.events.to_csv(p, index=False)),
        ("trace.json", lambda p: chrome_trace.write(res, p, max_events=trace_max_events)),
        ("timeline.png", lambda p: plot.save_timeline(res, p)),
    ]
    for name, write in writers:
        with atomic_path(folder / name) as tmp:
            write(tmp)
