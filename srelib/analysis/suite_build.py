"""Building the generated suite's file: every candidate, admitted only if it passes the gate.

    python -m srelib.analysis.suite_build

A candidate becomes a task when its derived tests admit it and so do the validity gate's
policies (:mod:`srelib.analysis.admission`: the reference at least 0.95, null at most 0.15,
always-no-change at most 0.35 except where no change is needed, each shortcut under its bound,
a blind revert that does not resolve ``full``). Episodes run in :data:`WORKERS` processes; every
rejection is counted under its reason. The admitted suite is then audited for tells (can one
surface field predict the culprit, the class, no-fault or the bad commit on held-out tasks?);
what it finds is kept with the report, and a generator it flags is refused: its suite file is
not written.

:func:`rebuild` does it all in a fresh cache (:func:`srelib.env.tasks.taskgen.cache.rebuilding`, which
also rewrites the cache's packaged digests) and writes the environment's
:data:`srelib.env.tasks.taskgen.suite.SUITE_FILE`, which records this build's :func:`gate_key` and,
per split, how many tasks have a bug shape srelib ships (:func:`public_shape_tasks`: on a keyed
suite those bugs are still public code); the environment reads that file and never plays a
policy itself.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from srelib.analysis.admission import audit_reasons, derived_test_reasons, gate_reasons
from srelib.analysis.gate import POLICY_FOLDER
from srelib.env.tasks.surface import key_id
from srelib.env.tasks.taskgen import cache, suite
from srelib.env.tasks.taskgen.family_lib import FAMILIES
from srelib.env.tasks.taskgen.recipes import split_of
from srelib.env.tasks.taskgen.shape_lib import PUBLIC_SHAPES
from srelib.env.tasks.taskgen.suite import SuiteReport, TaskInfo, card_digest
from srelib.env.tasks.taskgen.tasks import _candidates, derive_tests, task_history

#: Processes that play the gate: twice the cores (episodes wait on the sandbox and the disk).
WORKERS = min(4, 2 * (os.cpu_count() or 1))
#: The modules whose code decides admission, with every module of the gate's policy folder
#: (:data:`srelib.analysis.gate.POLICY_FOLDER`); the suite file records a digest of them.
GATE_SOURCES = ("admission.py", "gate.py", "suite_build.py", "tell_audit.py", "shortcuts.py",
                "validity.py")


def gate_key() -> str:
    """A digest of :data:`GATE_SOURCES`: a suite file with another key predates a change to them."""
    folder = Path(importlib.util.find_spec(POLICY_FOLDER).submodule_search_locations[0])
    digest = hashlib.sha256()
    paths = [Path(__file__).with_name(name) for name in GATE_SOURCES] + sorted(folder.glob("*.py"))
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _gate_batch(tasks: list[str]) -> dict[str, list[str]]:
    return {task: gate_reasons(task) for task in tasks}


def generate(workers: int = WORKERS) -> SuiteReport:
    """Generate and admit every candidate now (nothing read from the suite file); see the
    module doc."""
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
    by_split: dict = {"train": [], "heldout": []}
    for task, info in report.tasks.items():
        by_split[info.split].append(task)
    return audit_reasons(by_split["train"], by_split["heldout"])


def card(task: str, info: TaskInfo) -> dict:
    """The task card of an admitted task: what it is, where the bug sits and its split."""
    c, h = _candidates()[task], task_history(task)
    return {"family": info.family, "culprit": info.service, "shape": c.shape, "site": info.site,
            "bad_commit": h.commits[h.bad_index].sha if FAMILIES[c.family].needs_fix else None,
            "split": info.split}


def public_shape_tasks(tasks: dict) -> dict[str, int]:
    """How many of ``tasks`` (id -> TaskInfo) in each split have a bug shape srelib ships
    (:data:`~srelib.env.tasks.taskgen.shape_lib.PUBLIC_SHAPES`): their code is public, so on a keyed
    suite a policy that embeds srelib can still find such a bug by its text."""
    out = {"train": 0, "heldout": 0}
    for task, info in tasks.items():
        out[info.split] += _candidates()[task].shape in PUBLIC_SHAPES
    return out


def write_suite_file(report: SuiteReport) -> Path:
    """Write the suite file for ``report`` (see the module doc). A generator whose suite the
    tell audit flags is refused: ValueError, and the file stays as it was."""
    if report.tells:
        raise ValueError("the tell audit rejects this generator: one field predicts an answer "
                         "on held-out tasks (" + "; ".join(map(str, report.tells)) + "); run "
                         "'srelib tasks audit --suite generated' for the table")
    cards = {task: card(task, info) for task, info in sorted(report.tasks.items())}
    body = {"generator": cache.generator_key(), "gate": gate_key(), "digest": card_digest(cards),
            "key": key_id(), "public_shape_tasks": public_shape_tasks(report.tasks),
            "candidates": report.candidates, "tasks": cards,
            "rejected": {k: sorted(v) for k, v in sorted(report.rejected.items())},
            "tells": report.tells}
    path = suite.suite_file()
    path.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def rebuild(workers: int = WORKERS) -> Path:
    """Generate the suite in a fresh cache, rewrite the cache's packaged digests and the suite
    file; the suite file's path."""
    suite._MEMO.clear()
    with cache.rebuilding(lambda: derive_tests(list(_candidates()))):
        report = generate(workers)
        return write_suite_file(report)


if __name__ == "__main__":
    from srelib.analysis import suite_build  # the module the gate's worker processes import

    print(suite_build.rebuild(), cache.digest_file())
