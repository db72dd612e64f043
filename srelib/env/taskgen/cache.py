"""The on-disk cache of generated facts: ``$SRELIB_CACHE/taskgen/<version>-<source digest>/``.

``SRELIB_CACHE`` defaults to ``~/.cache/srelib``. The folder name carries GENERATOR_VERSION and
a digest of the generator's own source (and of ``srelib/admission.py``), so a changed generator
never reads stale entries.
Entries are JSON files written atomically (a temporary file renamed into place), so processes
that generate at the same time never see half a file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

from .recipes import GENERATOR_VERSION


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    digest = hashlib.sha256()
    admission = Path(__file__).parents[2] / "admission.py"  # the gate policies admission plays
    for path in [*sorted(Path(__file__).parent.glob("*.py")), admission]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def cache_dir() -> Path:
    """The cache folder of this generator version (not created here)."""
    root = Path(os.environ.get("SRELIB_CACHE") or Path.home() / ".cache" / "srelib")
    return root / "taskgen" / f"{GENERATOR_VERSION}-{_source_digest()}"


def read(name: str) -> object | None:
    """The cached JSON entry ``name`` (a relative path), or None if absent or unreadable."""
    try:
        return json.loads((cache_dir() / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write(name: str, value: object) -> None:
    """Store ``value`` as the JSON entry ``name``; a cache that cannot be written is skipped."""
    target = cache_dir() / name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(value, fh, sort_keys=True)
        os.replace(tmp, target)
    except OSError:
        pass
