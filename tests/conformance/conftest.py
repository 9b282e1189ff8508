"""The ``api`` marker of the conformance suite: which inventory items a test checks.

``@pytest.mark.api("nki.language.add", ...)`` names the items (``api_inventory.BY_NAME`` keys);
``scripts/compatibility.py`` reads these marks with the outcomes to write docs/compatibility.md.
A mark naming an item the inventory lacks is an error, so the doc cannot drift from the tests.
"""

from __future__ import annotations

import pytest

from .api_inventory import BY_NAME


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "api(*names): the NKI 2.26 API items a conformance "
                            "test checks (tests/conformance/api_inventory.py)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for it in items:
        for m in it.iter_markers("api"):
            unknown = [n for n in m.args if n not in BY_NAME]
            if unknown:
                raise pytest.UsageError(f"{it.nodeid}: api mark names items not in the "
                                        f"inventory: {unknown}")
