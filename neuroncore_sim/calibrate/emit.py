"""Write the microbenchmark suite to a folder: one kernel file per case and the runner.

    DIR/cases/<case>.py        the case's kernel (neuronxcc.nki API), inputs(), its metrics
    DIR/run_on_hardware.py     runs every case with nki.benchmark on a Trn1 / Inf2 host
    DIR/README.txt             what to do with it
"""

from __future__ import annotations

from pathlib import Path

from .measure import CASES_FOLDER
from .results import COLUMNS, CalibrationError
from .runner_source import PROFILE_PREFIX, PROFILE_UNITS, RUNNER
from .suite import CASES, SUITE_VERSION

RUNNER_FILE = "run_on_hardware.py"

_README = """Calibration suite {version} of neuroncore_sim ({count} cases in cases/).

On a Trn1 or Inf2 host with the Neuron SDK:
    python run_on_hardware.py --out results.csv --source trn1.2xlarge
Then, anywhere neuroncore_sim is installed:
    neuroncore-sim calibrate fit results.csv --out mine.toml
    neuroncore-sim profile my_kernel.py --config mine.toml
See docs/calibrate.md of neuroncore_sim.
"""


def emit(folder: Path) -> list[Path]:
    """Write the suite under ``folder`` (created if needed); the files written.

    Raises:
        CalibrationError: ``folder`` is a file, or cannot be written.
    """
    if folder.exists() and not folder.is_dir():
        raise CalibrationError(f"{folder}: expected a folder to write the suite in, found a file")
    written = []
    try:
        (folder / CASES_FOLDER).mkdir(parents=True, exist_ok=True)
        for case in CASES.values():
            path = folder / CASES_FOLDER / f"{case.id}.py"
            path.write_text(case.source(), encoding="utf-8")
            written.append(path)
        runner = folder / RUNNER_FILE
        runner.write_text(RUNNER.format(version=SUITE_VERSION, columns=COLUMNS,
                                         prefix=PROFILE_PREFIX, units=PROFILE_UNITS),
                          encoding="utf-8")
        readme = folder / "README.txt"
        readme.write_text(_README.format(version=SUITE_VERSION, count=len(CASES)),
                          encoding="utf-8")
    except OSError as e:
        raise CalibrationError(f"{folder}: cannot write the suite: {e.strerror or e}") from None
    return written + [runner, readme]
