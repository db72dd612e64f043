"""The generated suite: every candidate, admitted only if it passes the validity gate.

A candidate becomes a task when its derived tests admit it (:func:`derived_test_reasons`: at
least 1 FAIL_TO_PASS, except in the no-fault family, at least 3 PASS_TO_PASS, and a reference
fix that passes every hidden test) and so do the validity gate's policies
(:func:`srelib.admission.gate_reasons`: the reference at least 0.95, null at most 0.15,
always-no-change at most 0.35 except where no change is needed, each shortcut under its bound,
a blind revert that does not resolve ``full``). Episodes run in :data:`WORKERS` processes;
every rejection is counted under its reason, and the report is cached on disk.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context

from . import cache
from .families import FAMILIES
from .recipes import split_of
from .tasks import _candidates, derive_tests

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
    report.seconds = round(time.perf_counter() - start, 2)
    return report


_MEMO: list[SuiteReport] = []  # at most one report, the suite's (~0.1 MB)


def generated_suite() -> SuiteReport:
    """The suite, from memory, else the disk cache (``seconds`` 0), else generated and cached."""
    if _MEMO:
        return _MEMO[0]
    raw = cache.read("suite.json")
    if raw is not None:
        tasks = {t: TaskInfo(**raw["tasks"][t]) for t in _candidates() if t in raw["tasks"]}
        report = SuiteReport(tasks, raw["rejected"], 0.0, raw["candidates"])
    else:
        report = generate()
        cache.write("suite.json", {"tasks": {t: asdict(i) for t, i in report.tasks.items()},
                                   "rejected": report.rejected, "candidates": report.candidates})
    _MEMO.append(report)
    return report
