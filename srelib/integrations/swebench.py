"""SWE-bench files: the train split's phase-2 tasks out as a SWE-bench dataset, an external
agent's predictions in, SWE-bench's reports out, graded in srelib's sandbox.

:func:`export_dataset` writes ``train.jsonl``, one instance per train task that needs a code
change: ``instance_id`` (``srelib__<repo>-<task id>``, the opaque id), ``repo``
(``srelib/<repo>``, a generated task's repository named by its id: :func:`public_repo`),
``base_commit`` (the repository's newest commit, the tree an agent patches),
``problem_statement`` (the phase-2 issue of a pool-B episode: the incident and the oracle
hand-over), ``hints_text``, ``patch`` (the reference fix), ``FAIL_TO_PASS`` and
``PASS_TO_PASS`` (JSON-encoded lists of test ids, as SWE-bench stores them) and ``version``.
The repositories' files go to ``repos/<repo>/``. The tests themselves stay in srelib: grading
runs them. Held-out tasks are never exported, and their instance ids are not graded.

:func:`grade_predictions` reads SWE-bench predictions (``instance_id``, ``model_name_or_path``,
``model_patch``) from a file in either of the forms SWE-bench's harness takes
(:func:`load_predictions`: JSONL, or a ``.json`` list or ``{instance_id: prediction}``), grades each patch with
:func:`srelib.env.grading.pipeline.grade_patch` and writes, per model, SWE-bench's
``<model>/<instance_id>/report.json`` (``patch_is_None``, ``patch_exists``,
``patch_successfully_applied``, ``resolved`` as booleans, and ``tests_status`` once the patch
applied) and ``<model>.json``, a run summary with SWE-bench's counts and id lists (its
``total_instances`` counts the instances submitted). A line that cannot be graded (not JSON,
a field missing, an unknown or held-out instance id, a repeated one) becomes an entry of
``problems.json`` and of its model's ``error_ids`` when it names one; it never stops the run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from srelib._version import __version__
from srelib.env.tasks.catalog import list_tasks, split_of
from srelib.env.core import IncidentEnv
from srelib.env.grading.errors import GradingError
from srelib.env.grading.pipeline import grade_patch
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.simulation.scenarios import is_classic
from srelib.env.tasks.ids import resolve, task_id

PREFIX = "srelib__"
DATASET_FILE = "train.jsonl"
PROBLEMS_FILE = "problems.json"
SCHEMA_VERSION = 2  # SWE-bench's run-summary schema these summaries follow
#: SWE-bench's four test categories; srelib's tasks only have the first two.
TEST_CATEGORIES = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
PREDICTION_FIELDS = ("instance_id", "model_name_or_path", "model_patch")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_INSTANCE = re.compile(rf"^{PREFIX}.+-([cg]-[0-9a-f]+)$")


def instance_id(task: str) -> str:
    """The SWE-bench instance id of ``task``: ``srelib__<repo>-<task id>`` (the repository as
    :func:`public_repo` names it, the task by its opaque id: an agent reads neither the task's
    family nor its culprit from it)."""
    return f"{PREFIX}{public_repo(task)}-{task_id(task)}"


def public_repo(task: str) -> str:
    """The name ``task``'s repository is exported under: a classic repository's own name, or
    ``gen-`` and the digits of a generated task's opaque id (its own name spells the task)."""
    name = resolve(task)
    return get_scenario(name).repo if is_classic(name) else f"gen-{task_id(name)[2:]}"


def task_of(instance: object) -> str:
    """The train task an instance id names; ValueError when it names none."""
    found = _INSTANCE.match(instance) if isinstance(instance, str) else None
    if found is None:
        raise ValueError(f"unknown instance id {str(instance)[:80]!r}: not srelib__<repo>-<task id>")
    try:
        task = resolve(found.group(1))
        known = instance_id(task) == instance and split_of(task) == "train"
    except ValueError:
        known = False
    if not known or load_repo(get_scenario(task).repo).fix_diff(task) is None:
        raise ValueError(f"unknown instance id {instance[:80]!r}: no train task with a code fix")
    return task


def instance(task: str, seed: int = 0) -> dict[str, Any]:
    """``task``'s SWE-bench instance (``task`` must be a train task that needs a fix)."""
    if split_of(task) != "train":
        raise ValueError(f"{task} is held out; only train tasks are exported")
    scenario = get_scenario(task)
    repo = load_repo(scenario.repo)
    fix = repo.fix_diff(task)
    if fix is None:
        raise ValueError(f"{task} needs no code change, so it has no SWE-bench instance")
    obs, _ = IncidentEnv().reset(task=task, pool="B", seed=seed)
    return {"instance_id": instance_id(task), "repo": f"srelib/{public_repo(task)}",
            "base_commit": repo.commits[0].sha, "problem_statement": obs["issue"],
            "hints_text": "", "patch": fix,
            "FAIL_TO_PASS": json.dumps(repo.fail_to_pass(task)),
            "PASS_TO_PASS": json.dumps(repo.pass_to_pass(task)), "version": __version__}


def export_dataset(out: str | Path, suite: str = "classic", seed: int = 0) -> list[dict]:
    """Write ``suite``'s train instances to ``out/train.jsonl`` and their repositories' files
    to ``out/repos/``; return the instances."""
    out = Path(out)
    tasks = [t for t in list_tasks(suite, "train")
             if load_repo(get_scenario(t).repo).fix_diff(t) is not None]
    instances = [instance(t, seed) for t in tasks]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / DATASET_FILE, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(i) + "\n" for i in instances)
    for name, shown in sorted({(get_scenario(t).repo, public_repo(t)) for t in tasks}):
        for rel, text in load_repo(name).tree.items():
            target = out / "repos" / shown / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return instances


def read_predictions(lines: Iterable[str]) -> tuple[list[dict], list[dict]]:
    """``(predictions, problems)`` from JSONL lines; each problem is ``{line, instance_id,
    model_name_or_path, error}`` (the ids None when the line does not give them)."""
    predictions, problems = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            problems.append(_problem(number, {}, f"not JSON ({exc})"))
            continue
        row = row if isinstance(row, dict) else {}
        missing = [k for k in PREDICTION_FIELDS if k not in row]
        bad = [k for k in PREDICTION_FIELDS[:2] if k in row and not isinstance(row[k], str)]
        if not isinstance(row.get("model_patch", ""), (str, type(None))):
            bad.append("model_patch")
        if missing or bad:
            why = "; ".join(filter(None, [missing and f"missing {missing}",
                                          bad and f"not a string: {bad}"]))
            problems.append(_problem(number, row, f"not a prediction: {why}"))
            continue
        predictions.append({**{k: row[k] for k in PREDICTION_FIELDS}, "line": number})
    return predictions, problems


def load_predictions(path: str | Path) -> tuple[list[dict], list[dict]]:
    """:func:`read_predictions` of a file as SWE-bench's harness reads one: a ``.json`` file holds
    a list of predictions or an ``{instance_id: prediction}`` mapping (a problem's ``line`` is
    then the entry's number), any other file one prediction a line; ValueError for a ``.json``
    file that is neither."""
    path = Path(path)
    if path.suffix != ".json":
        with open(path, encoding="utf-8", errors="replace") as f:
            return read_predictions(f)
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{path.name} is not JSON ({str(exc)[:200]})") from None
    if isinstance(data, dict):
        data = list(data.values())
    if not isinstance(data, list):
        raise ValueError(f"{path.name} must hold a list of predictions or an "
                         f"{{instance_id: prediction}} object, not {type(data).__name__}")
    return read_predictions(json.dumps(row) for row in data)


def _problem(line: int, row: dict, error: str) -> dict:
    ids = {k: row.get(k) if isinstance(row.get(k), str) else None for k in PREDICTION_FIELDS[:2]}
    return {"line": line, **ids, "error": error}


def instance_report(prediction: dict, task: str) -> dict[str, Any]:
    """SWE-bench's per-instance report of one prediction, ``{instance_id: {...}}``."""
    patch = prediction["model_patch"]
    entry: dict[str, Any] = {"patch_is_None": patch is None, "patch_exists": patch is not None,
                             "patch_successfully_applied": False, "resolved": False}
    if patch is not None:
        graded = grade_patch(get_scenario(task).repo, task, patch)
        entry["patch_successfully_applied"] = graded["patch_applied"]
        if graded["patch_applied"]:
            entry["resolved"] = graded["resolved"] == "full"
            entry["tests_status"] = {
                c: {"success": [t for t, ok in graded.get(c, {}).items() if ok],
                    "failure": [t for t, ok in graded.get(c, {}).items() if not ok]}
                for c in TEST_CATEGORIES}
    return {prediction["instance_id"]: entry}


def model_folder(model: str) -> str:
    """A model name as a folder name (``/`` becomes ``__``, as SWE-bench does)."""
    return _UNSAFE.sub("_", model.replace("/", "__"))[:120].lstrip(".") or "_"


def grade_predictions(path: str | Path, out: str | Path) -> dict[str, Any]:
    """Grade the predictions in ``path``, write the reports under ``out`` (module docstring);
    return ``{"summaries": {model: summary}, "problems": [...]}``."""
    out = Path(out)
    predictions, problems = load_predictions(path)
    summaries: dict[str, dict] = {}
    for prediction in predictions:
        model, iid = prediction["model_name_or_path"], prediction["instance_id"]
        summary = summaries.setdefault(model, {k: [] for k in _ID_LISTS})
        if iid in summary["submitted_ids"] or iid in summary["error_ids"]:
            problems.append(_problem(prediction["line"], prediction,
                                     f"a second prediction for {iid[:80]!r}; the first counts"))
            continue
        try:
            task = task_of(iid)
        except ValueError as exc:
            problems.append(_problem(prediction["line"], prediction, str(exc)))
            summary["error_ids"].append(iid)
            continue
        try:
            report = instance_report(prediction, task)
        except GradingError as exc:  # the grader failed, not the patch: an evaluation error
            problems.append(_problem(prediction["line"], prediction, f"grading error: {exc}"))
            summary["error_ids"].append(iid)
            continue
        folder = out / model_folder(model) / iid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(json.dumps(report, indent=4) + "\n")
        _count(summary, iid, prediction["model_patch"], report[iid])
    result = {"summaries": {m: _finish(s) for m, s in summaries.items()}, "problems": problems}
    out.mkdir(parents=True, exist_ok=True)
    for model, summary in result["summaries"].items():
        (out / f"{model_folder(model)}.json").write_text(json.dumps(summary, indent=4) + "\n")
    (out / PROBLEMS_FILE).write_text(json.dumps(problems, indent=4) + "\n")
    return result


_ID_LISTS = ("submitted_ids", "completed_ids", "resolved_ids", "unresolved_ids",
             "empty_patch_ids", "error_ids")


def _count(summary: dict, iid: str, patch: str | None, entry: dict) -> None:
    """File one graded instance under SWE-bench's categories."""
    summary["submitted_ids"].append(iid)
    if patch in (None, ""):
        summary["empty_patch_ids"].append(iid)
    elif not entry["patch_successfully_applied"]:
        summary["error_ids"].append(iid)
    else:
        summary["completed_ids"].append(iid)
        summary["resolved_ids" if entry["resolved"] else "unresolved_ids"].append(iid)


def _finish(summary: dict) -> dict[str, Any]:
    """SWE-bench's run summary: the counts, then the sorted id lists."""
    ids = {k: sorted(v) for k, v in summary.items()}
    submitted = sorted(set(ids["submitted_ids"]) | set(ids["error_ids"]))
    counts = {"total_instances": len(submitted), "submitted_instances": len(submitted),
              **{k.replace("_ids", "_instances"): len(v) for k, v in ids.items()
                 if k != "submitted_ids"}}
    return {**counts, **ids, "submitted_ids": submitted, "schema_version": SCHEMA_VERSION}
