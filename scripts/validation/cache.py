"""The results cache: one JSON line per case result, keyed by what the result depends on.

A key hashes (case id, the text of the kernel files the case runs, the config's fingerprint,
the package's source): editing a kernel, a config field (compile options included) or any
``neuroncore_sim/**/*.py`` file makes every affected entry a miss. Entries are appended, never
rewritten; the last line of a key wins.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import threading
from pathlib import Path
from typing import Any


def text_hash(*texts: str) -> str:
    """Short hash of some texts (their order matters)."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def source_hash(package: Path) -> str:
    """Hash of every ``*.py`` file under ``package`` (relative paths and contents)."""
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def plain(obj: Any) -> Any:
    """``obj`` as JSON-ready data, recursing into dataclasses (nested option objects included),
    mappings and sequences; anything else by its ``repr``."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple, frozenset, set)):
        items = [plain(v) for v in obj]
        return sorted(items, key=repr) if isinstance(obj, (set, frozenset)) else items
    if isinstance(obj, enum.Enum):
        return plain(obj.value)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return repr(obj)


def config_fingerprint(config: Any) -> str:
    """The config's own ``fingerprint()`` and a hash of every field, nested ones included (so
    compile options carried in the config count even if ``fingerprint()`` misses one); the
    name is left out, as ``fingerprint()`` does."""
    fields = plain(config)
    if isinstance(fields, dict):
        fields.pop("name", None)
    own = config.fingerprint() if hasattr(config, "fingerprint") else "-"
    return f"{own}-{text_hash(json.dumps(fields, sort_keys=True))}"


def cache_key(case_id: str, kernel_hash: str, config_fp: str, source: str) -> str:
    """The cache key of one case's result."""
    return text_hash(json.dumps([case_id, kernel_hash, config_fp, source]))


class Cache:
    """A JSON-lines file of results under ``folder`` (``results.jsonl``); ``enabled=False``
    reads nothing and stores nothing."""

    def __init__(self, folder: Path, enabled: bool = True) -> None:
        self.path = folder / "results.jsonl"
        self.enabled = enabled
        self._lock = threading.Lock()
        self._entries: dict[str, dict] = {}
        if enabled and self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by an interrupted run
                self._entries[entry["key"]] = entry["result"]

    def get(self, key: str) -> dict | None:
        """The stored result of ``key``, or None."""
        return self._entries.get(key) if self.enabled else None

    def put(self, key: str, result: dict) -> None:
        """Store a result (failed cases are not stored: they run again next time)."""
        if not self.enabled or not result.get("ok"):
            return
        with self._lock:
            self._entries[key] = result
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(json.dumps({"key": key, "result": result}) + "\n")
