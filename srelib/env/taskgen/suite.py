"""The generated suite: every candidate, admitted only if it passes the validity gate.

A candidate becomes a task when its derived tests admit it (:func:`derived_test_reasons`: at
least 1 FAIL_TO_PASS, except in the no-fault family, at least 3 PASS_TO_PASS, and a reference
fix that passes every hidden test) and so do the validity gate's policies
(:func:`srelib.admission.gate_reasons`: the reference at least 0.95, null at most 0.15,
always-no-change at most 0.35 except where no change is needed, each shortcut under its bound,
a blind revert that does not resolve ``full``). Episodes run in :data:`WORKERS` processes;
every rejection is counted under its reason. The admitted suite is then audited for tells
(:func:`srelib.admission.audit_reasons`: can one surface field predict the culprit, the class,
no-fault or the bad commit on held-out tasks?); what it finds is kept with the report, and a
generator it flags is refused: its suite file is not written.

The suite is an artefact: :data:`SUITE_FILE`, in the package, holds every admitted task's card
(family, culprit, shape, site, bad commit, split), the rejections, the audit's findings and a
digest of the cards; ``python -m srelib.env.taskgen`` rewrites it, so a changed generator shows
up as a diff of that file. It is used when its generator key is this generator's; otherwise the
suite is generated (and the disk cache, checked against ``suite_digest.json``, speeds that up).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path

from . import cache
from .family_lib import FAMILIES
from .recipes import split_of
from .tasks import _candidates, derive_tests, task_history

SUITE_FILE = Path(__file__).with_name("suite.json")

#: Processes that play the gate: twice the cores (episodes wait on the sandbox and the disk).
WORKERS = min(4, 2 * (os.cpu_count() or 1))
MIN_FAIL_TO_PASS, MIN_PASS_TO_PASS = 1, 3


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
    (0 when the report came from the cache)."""

    tasks: dict = field(default_factory=dict)
    rejected: dict = field(default_factory=dict)
    seconds: float = 0.0
    candidates: int = 0
    tells: list = field(default_factory=list)  # the tell audit's findings (empty: none)

    @property
    def admission_rate(self) -> float:
        return len(self.tasks) / self.candidates if self.candidates else 0.0


def derived_test_reasons(task: str, tests: dict) -> list[str]:
    """Why the derived tests reject ``task`` (empty: they admit it)."""
    reasons = []
    if tests["broken"]:
        reasons.append("reference fix fails hidden tests")
    if FAMILIES[task.split(".", 1)[0]].needs_fix and len(tests["fail_to_pass"]) < MIN_FAIL_TO_PASS:
        reasons.append(f"fewer than {MIN_FAIL_TO_PASS} FAIL_TO_PASS")
    if len(tests["pass_to_pass"]) < MIN_PASS_TO_PASS:
        reasons.append(f"fewer than {MIN_PASS_TO_PASS} PASS_TO_PASS")
    return reasons


def _gate_batch(tasks: list[str]) -> dict[str, list[str]]:
    # the gate's policies live above the environment; generation is their one caller here
    from srelib.admission import gate_reasons

    return {task: gate_reasons(task) for task in tasks}


def generate(workers: int = WORKERS) -> SuiteReport:
    """Generate and admit every candidate now (no cache read); see the module doc."""
    start = time.perf_counter()
    ids = list(_candidates())
    tests = derive_tests(ids)
    reasons = {task: derived_test_reasons(task, tests[task]) for task in ids}
    to_play = [t for t in ids if not reasons[t]]
    chunks = [to_play[k::workers * 4] for k in range(workers * 4)]
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            for found in pool.map(_gate_batch, chunks):
                for task, why in found.items():
                    reasons[task] += why
    else:
        for task, why in _gate_batch(to_play).items():
            reasons[task] += why
    report = SuiteReport(candidates=len(ids))
    for task in ids:
        for why in reasons[task]:
            report.rejected.setdefault(why, []).append(task)
        if not reasons[task]:
            c = _candidates()[task]
            report.tasks[task] = TaskInfo(c.family, c.service, c.site, split_of(c.shape))
    report.tells = _audit(report)
    report.seconds = round(time.perf_counter() - start, 2)
    return report


def _audit(report: SuiteReport) -> list[str]:
    # the audit reads episodes through the policies' helpers above the environment
    from srelib.admission import audit_reasons

    by_split: dict = {"train": [], "heldout": []}
    for task, info in report.tasks.items():
        by_split[info.split].append(task)
    return audit_reasons(by_split["train"], by_split["heldout"])


def cache_entry(report: SuiteReport) -> dict:
    """``report`` as the disk cache's ``suite.json`` entry."""
    return {"tasks": {t: asdict(i) for t, i in report.tasks.items()}, "rejected": report.rejected,
            "candidates": report.candidates, "tells": report.tells}


def card(task: str, info: TaskInfo) -> dict:
    """The task card of an admitted task: what it is, where the bug sits and its split."""
    c, h = _candidates()[task], task_history(task)
    return {"family": info.family, "culprit": info.service, "shape": c.shape, "site": info.site,
            "bad_commit": h.commits[h.bad_index].sha if FAMILIES[c.family].needs_fix else None,
            "split": info.split}


def write_suite_file(report: SuiteReport) -> Path:
    """Write :data:`SUITE_FILE` for ``report`` (see the module doc). A generator whose suite
    the tell audit flags is refused: ValueError, and the file stays as it was."""
    if report.tells:
        raise ValueError("the tell audit rejects this generator: one field predicts an answer "
                         "on held-out tasks (" + "; ".join(map(str, report.tells)) + "); run "
                         "'srelib tasks audit --suite generated' for the table")
    cards = {task: card(task, info) for task, info in sorted(report.tasks.items())}
    digest = hashlib.sha256(json.dumps(cards, sort_keys=True).encode()).hexdigest()
    body = {"generator": cache.generator_key(), "digest": digest, "candidates": report.candidates,
            "tasks": cards, "rejected": {k: sorted(v) for k, v in sorted(report.rejected.items())},
            "tells": report.tells}
    SUITE_FILE.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return SUITE_FILE


def _packaged() -> SuiteReport | None:
    """The report :data:`SUITE_FILE` holds, if it is this generator's and its digest holds."""
    try:
        raw = json.loads(SUITE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if raw.get("generator") != cache.generator_key():
        return None
    if hashlib.sha256(json.dumps(raw["tasks"], sort_keys=True).encode()).hexdigest() != raw["digest"]:
        raise ValueError(f"{SUITE_FILE}: its task cards do not match its digest (edited by hand?); "
                         "python -m srelib.env.taskgen rewrites it")
    tasks = {t: TaskInfo(c["family"], c["culprit"], c["site"], c["split"])
             for t, c in raw["tasks"].items() if t in _candidates()}
    return SuiteReport(tasks, raw["rejected"], 0.0, raw["candidates"], raw["tells"])


_MEMO: list[SuiteReport] = []  # at most one report, the suite's (~0.1 MB)


def generated_suite() -> SuiteReport:
    """The suite, from memory, else the packaged :data:`SUITE_FILE`, else the disk cache
    (``seconds`` 0 for both), else generated and cached."""
    if _MEMO:
        return _MEMO[0]
    report = _packaged()
    raw = None if report is not None else cache.read("suite.json")
    if raw is not None:
        tasks = {t: TaskInfo(**raw["tasks"][t]) for t in _candidates() if t in raw["tasks"]}
        report = SuiteReport(tasks, raw["rejected"], 0.0, raw["candidates"], raw["tells"])
    elif report is None:
        report = generate()
        cache.write("suite.json", cache_entry(report))
    _MEMO.append(report)
    return report
