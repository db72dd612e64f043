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


def card_digest(cards: dict) -> str:
    """The SHA-256 of a suite file's task cards, as its ``digest`` records it."""
    return hashlib.sha256(json.dumps(cards, sort_keys=True).encode()).hexdigest()


def _packaged() -> SuiteReport:
    """The report :data:`SUITE_FILE` holds; ValueError naming :data:`REBUILD` when the file is
    missing, another generator's, or its cards do not match its digest."""
    try:
        raw = json.loads(SUITE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{SUITE_FILE} cannot be read ({exc}); {REBUILD} rewrites it") from None
    if raw.get("generator") != cache.generator_key():
        raise ValueError(f"{SUITE_FILE} was written by generator {raw.get('generator')!r}, not by "
                         f"this one ({cache.generator_key()}); {REBUILD} rewrites it")
    if card_digest(raw["tasks"]) != raw["digest"]:
        raise ValueError(f"{SUITE_FILE}: its task cards do not match its digest (edited by hand?); "
                         f"{REBUILD} rewrites it")
    tasks = {t: TaskInfo(c["family"], c["culprit"], c["site"], c["split"])
             for t, c in raw["tasks"].items() if t in _candidates()}
    return SuiteReport(tasks, raw["rejected"], 0.0, raw["candidates"], raw["tells"])


_MEMO: list[SuiteReport] = []  # at most one report, the suite's (~0.1 MB)


def generated_suite() -> SuiteReport:
    """The suite, from memory, else read from :data:`SUITE_FILE` (see the module doc)."""
    if not _MEMO:
        _MEMO.append(_packaged())
    return _MEMO[0]
