"""The generated suite as the environment reads it: the packaged :data:`SUITE_FILE`.

The suite is an artefact. Its file, in the package, holds every admitted task's card (family,
culprit, shape, site, bad commit, split), the rejected candidates by reason, the tell audit's
findings and a digest of the cards. Admission plays policies on every candidate, so it lives
above the environment: ``python -m srelib.analysis.suite_build`` generates the candidates, admits
them (:mod:`srelib.analysis.admission`) and rewrites this file, and a changed generator shows up
as a diff of it. The environment only reads it: :func:`generated_suite` refuses a file written
for another generator (its ``generator`` key is not :func:`.cache.generator_key`) or whose cards
do not match their digest, naming the command that rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from srelib.env.tasks.surface import suite_dir

from . import cache
from .tasks import _candidates

SUITE_FILE = Path(__file__).with_name("suite.json")
#: The command that rebuilds :data:`SUITE_FILE` (and the cache's digests).
REBUILD = "python -m srelib.analysis.suite_build"


@dataclass(frozen=True)
class TaskInfo:
    """Where an admitted task comes from and which split it is in."""

    family: str
    service: str
    site: str
    split: str


@dataclass
class SuiteReport:
    """Admitted tasks by id, rejected candidates by reason, and how long generation took
    (0 when the report was read from :data:`SUITE_FILE`)."""

    tasks: dict = field(default_factory=dict)
    rejected: dict = field(default_factory=dict)
    seconds: float = 0.0
    candidates: int = 0
    tells: list = field(default_factory=list)  # the tell audit's findings (empty: none)

    @property
    def admission_rate(self) -> float:
        return len(self.tasks) / self.candidates if self.candidates else 0.0


def suite_file() -> Path:
    """The suite file this process plays: :data:`SUITE_FILE`, or a private suite's
    (:func:`srelib.env.tasks.surface.suite_dir`)."""
    folder = suite_dir()
    return SUITE_FILE if folder is None else folder / "suite.json"


def card_digest(cards: dict) -> str:
    """The SHA-256 of a suite file's task cards, as its ``digest`` records it."""
    return hashlib.sha256(json.dumps(cards, sort_keys=True).encode()).hexdigest()


def _packaged() -> SuiteReport:
    """The report :func:`suite_file` holds; ValueError naming :data:`REBUILD` when the file is
    missing, another generator's, or its cards do not match its digest."""
    path = suite_file()
    rebuild = REBUILD if path == SUITE_FILE else "srelib tasks build --key FILE"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read ({exc}); {rebuild} writes it") from None
    if raw.get("generator") != cache.generator_key():
        raise ValueError(f"{path} was written by generator {raw.get('generator')!r}, not by "
                         f"this one ({cache.generator_key()}); {rebuild} rewrites it")
    if card_digest(raw["tasks"]) != raw["digest"]:
        raise ValueError(f"{path}: its task cards do not match its digest (edited by hand?); "
                         f"{rebuild} rewrites it")
    tasks = {t: TaskInfo(c["family"], c["culprit"], c["site"], c["split"])
             for t, c in raw["tasks"].items() if t in _candidates()}
    return SuiteReport(tasks, raw["rejected"], 0.0, raw["candidates"], raw["tells"])


_MEMO: list[SuiteReport] = []  # at most one report, the suite's (~0.1 MB)


def generated_suite() -> SuiteReport:
    """The suite, from memory, else read from :func:`suite_file` (see the module doc)."""
    if not _MEMO:
        _MEMO.append(_packaged())
    return _MEMO[0]
