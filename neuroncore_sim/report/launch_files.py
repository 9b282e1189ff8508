"""The files ``--out DIR`` writes per launch, and the check of ``DIR`` before any work.

A launch's files are written as a set (:func:`write_files`): each to a temporary name in its
folder, all renamed into place once every one is complete, so an interrupted run or a full disk
leaves the previous files or the new ones, never half of one or some of a set; a write that
fails is an :class:`OutputWriteError` naming the path. The
output folder is checked (created, and written to once) before the simulation starts: a place
that cannot hold the files is a usage error at once, not after minutes of simulation.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
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


class OutputWriteError(SimulatorError):
    """A file of the output could not be written (a full disk, a file or folder that cannot be
    written); the message names the path."""


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


def check_launch_folder(folder: Path) -> None:
    """OutputWriteError unless ``folder`` is absent or a folder whose files can be replaced
    (checked before a launch is simulated, where its folder is known, and before any file of a
    launch is written)."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise OutputWriteError(f"cannot write {folder}: expected a folder for the launch's "
                               "files, found a file")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".ncs-write-check-"):
            pass
    except OSError as e:
        raise OutputWriteError(f"cannot write {folder}: {e.strerror or e}") from None


#: What writes one file (or, for a name ending in "/", one folder) at the path it is given.
Writer = Callable[[Path], object]


def write_files(folder: Path, writers: dict[str, Writer]) -> None:
    """Write the files ``writers`` name into ``folder`` as a set: each is written to a
    temporary name beside its place, and only when all are complete are they renamed into
    place. A failure (a full disk, an interruption) leaves the files that were there before,
    none of the new ones and no temporary.

    Raises:
        OutputWriteError: a file could not be written (its path is named).
    """
    for name in writers:  # what is in the way is said before anything is written
        final = folder / name.rstrip("/")
        if final.exists() and final.is_dir() != name.endswith("/"):
            kinds = ("a folder", "a file") if name.endswith("/") else ("a file", "a folder")
            raise OutputWriteError(f"cannot write {final}: expected {kinds[0]} (or nothing), "
                                   f"found {kinds[1]}")
    made: list[tuple[Path, Path]] = []  # (temporary, final)
    new_folder = not folder.exists()
    try:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for name, write in writers.items():
                final = folder / name.rstrip("/")
                if name.endswith("/"):
                    tmp = Path(tempfile.mkdtemp(dir=folder, prefix=f".{final.name}."))
                else:
                    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{final.name}.",
                                                    suffix=final.suffix)
                    os.close(fd)
                    tmp = Path(tmp_name)
                made.append((tmp, final))
                write(tmp)
            for tmp, final in made:
                os.chmod(tmp, (0o777 if tmp.is_dir() else 0o666) & ~_UMASK)
        except OSError as e:
            path = made[-1][1] if made else folder
            raise OutputWriteError(f"cannot write {path}: {e.strerror or e}; none of the "
                                   f"files of this set was written to {folder}") from None
        for n, (tmp, final) in enumerate(made):
            try:
                _move_into_place(tmp, final)
            except OSError as e:  # (rare: the folder changed under us) the rest is not moved
                made = made[n:]
                raise OutputWriteError(f"cannot write {final}: {e.strerror or e}") from None
        made = []
    finally:
        for tmp, _ in made:
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            elif tmp.exists():
                tmp.unlink()
        if made and new_folder and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # a failed set leaves no empty folder it made


def _move_into_place(tmp: Path, final: Path) -> None:
    if tmp.is_dir() and final.is_dir():  # a folder cannot be renamed over a full one
        old = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.old."))
        os.replace(final, old / final.name)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)


def write_launch_files(res: "SimResult", folder: Path, trace_max_events: int | None = None,
                       extra: dict[str, Writer] | None = None,
                       window: tuple[float | None, float | None] | None = None) -> None:
    """``summary.json`` (with the advice), ``summary.txt``, ``events.csv``, ``trace.json`` and
    ``timeline.png`` (only ``window``, ns, when given: :func:`.plot.timeline`) of one launch in
    ``folder``, and the ``extra`` files, written as a set (:func:`write_files`)."""
    from . import chrome_trace, plot
    from .advice import advice
    from .tables import full_text

    check_launch_folder(folder)
    summary = res.summary()
    summary["advice"] = [tip.as_dict() for tip in advice(res, summary)]
    write_files(folder, {
        "summary.json": lambda p: p.write_text(json.dumps(summary, indent=2) + "\n"),
        "summary.txt": lambda p: p.write_text(full_text(res)),
        "events.csv": lambda p: res.events.to_csv(p, index=False),
        "trace.json": lambda p: chrome_trace.write(res, p, max_events=trace_max_events),
        "timeline.png": lambda p: plot.save_timeline(res, p, window=window),
        **(extra or {})})
