"""Helpers for error-path tests: a bad kernel marks its failing line with ``# BAD``."""

from __future__ import annotations

import inspect
import os
import re

import pytest

import neuroncore_sim as ncs


def bad_line(kernel) -> int:
    """Line number of the kernel line marked ``# BAD``."""
    src, start = inspect.getsourcelines(kernel)
    return start + next(i for i, s in enumerate(src) if "# BAD" in s)


def expect_error(cls, message: str, kernel, *args):
    """Simulating ``kernel`` (values, no timing) raises exactly ``cls`` at its ``# BAD`` line,
    with a message matching the regular expression ``message``."""
    with pytest.raises(cls) as info:
        ncs.simulate(kernel, *args, timing=False)
    assert type(info.value) is cls
    where = f"{os.path.basename(inspect.getsourcefile(kernel))}:{bad_line(kernel)}"
    assert info.value.loc == where, str(info.value)
    assert re.search(message, info.value.message), info.value.message
    return info.value
