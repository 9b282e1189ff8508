"""scripts/compatibility.py: item statuses from test outcomes, AWS runner sections, and the
committed docs/compatibility.md covering every inventory item."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("compatibility", ROOT / "scripts" /
                                               "compatibility.py")
compat = importlib.util.module_from_spec(_spec)
sys.modules["compatibility"] = compat  # its dataclasses look their module up there
_spec.loader.exec_module(compat)

from tests.conformance.api_inventory import BY_NAME, INVENTORY  # noqa: E402


def _outcomes(**kw):
    out = compat.Outcomes()
    for kind, pairs in kw.items():
        for name, test in pairs:
            getattr(out, kind)[name].append(test)
    return out


def test_statuses_follow_the_outcomes():
    add, exp = BY_NAME["nki.language.add"], BY_NAME["nki.language.exp"]
    out = _outcomes(passed=[("nki.language.add", "test_x.py::test_add"),
                            ("nki.language.exp", "test_api_surface.py::test_item_exists[e]")])
    assert compat.status(add, out)[0] == "supported"
    assert compat.status(exp, out)[0] == "present"
    out = _outcomes(passed=[("nki.language.add", "t")], xfailed=[("nki.language.add", "why")])
    assert compat.status(add, out) == ("partly", "why")
    out = _outcomes(passed=[("nki.language.add", "t")], failed=[("nki.language.add", "t2")])
    assert compat.status(add, out)[0] == "FAILS"
    rs = BY_NAME["nki.isa.range_select"]
    assert compat.status(rs, _outcomes())[0] == "not on NeuronCore-v2"
    assert compat.status(BY_NAME["nki.language.all_reduce"], _outcomes())[0] == "not simulated"
    assert compat.status(exp, _outcomes())[0] == "untested"


def test_aws_section_gives_each_failure_its_reason_or_flags_it():
    log = ("ok   test_a.py: 2 passed, 0 failed\n"
           "FAIL test_nki_isa_range_select.py: 0 passed, 2 failed UnsupportedError: ...\n"
           "FAIL test_new.py: 0 passed, 1 failed KeyError\n"
           "2 passed, 3 failed\n")
    text = "\n".join(compat.aws_section("T", log, compat.AWS_API_REASONS, r"^FAIL\s+(\S+?):"))
    assert "Result: 2 passed, 3 failed." in text
    assert "| `test_nki_isa_range_select.py` | range_select is NeuronCore-v3" in text
    assert "| `test_new.py` | UNEXPLAINED" in text


def test_committed_doc_lists_every_inventory_item():
    doc = (ROOT / "docs" / "compatibility.md").read_text()
    for module in compat.MODULES:
        section = doc.split(f"## `{module}`", 1)[1].split("\n## ", 1)[0]
        for item in INVENTORY:
            if item.module == module:
                assert f"| `{item.name}` |" in section, item.qualname
    assert "| FAILS |" not in doc and "UNEXPLAINED" not in doc
