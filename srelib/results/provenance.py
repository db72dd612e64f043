"""What made a trained model or a stored output: srelib's code, the data, the libraries and the
CPU kernels.

Training is deterministic on one machine class, but torch picks its CPU kernels by processor
(``ATEN_CPU_CAPABILITY``: default, avx2, avx512), so the same code trains different weights on
different processors. :func:`machine_class` names the class; :func:`source_digest` and
:func:`data_digest` name the code and the data; :func:`digest` folds any of them into the
short key that names a saved agent's folder.
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path

#: srelib's package folder, whose files :func:`source_digest` reads.
PACKAGE = Path(__file__).resolve().parents[1]


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def cpu_capability() -> str | None:
    """The CPU kernel level torch runs here (``DEFAULT``, ``AVX2``, ``AVX512``...), or None
    without torch. ``ATEN_CPU_CAPABILITY`` lowers it."""
    try:
        import torch
    except ImportError:
        return None
    return torch.backends.cpu.get_cpu_capability()


def machine_class() -> dict:
    """The things that change a trained model's bits from one machine to the next: the CPU
    kernel level, torch's and transformers' versions, Python and the processor."""
    return {"cpu_capability": cpu_capability(), "torch": _version("torch"),
            "transformers": _version("transformers"), "python": platform.python_version(),
            "processor": platform.machine()}


def source_digest(root: Path = PACKAGE) -> str:
    """sha256 of every file under ``root`` (srelib's code and packaged data), by relative
    path; byte caches are skipped."""
    sha = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()
                       and "__pycache__" not in p.parts and p.suffix != ".pyc"):
        sha.update(path.relative_to(root).as_posix().encode() + b"\0")
        sha.update(hashlib.sha256(path.read_bytes()).digest())
    return sha.hexdigest()


def data_digest(rows) -> str:
    """sha256 of JSON-serialisable training ``rows``, keys sorted."""
    return hashlib.sha256(json.dumps(list(rows), sort_keys=True, default=str).encode()).hexdigest()


def digest(record: dict, length: int = 12) -> str:
    """A short hex key for a JSON-serialisable ``record``."""
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:length]
