"""Localisation columns: how close an episode came to the fault, read from its trajectory.

Analysis only: nothing here enters the reward. :func:`localisation` reads an episode's records
against the task (the scenario's culprit service, :func:`srelib.env.grading.bug_site.bug_site`) and
returns :data:`LOCALISATION_COLUMNS`:

phase 1 (None when phase 1 was not played, as in ``p2_only``):

* ``culprit_rank``: the culprit's position (1 = first) among the services the agent checked, in
  the order it first checked each; None if never checked. A check is a valid investigation
  action aimed at a service (:data:`SIGNALS`).
* ``culprit_step``, ``culprit_minutes``: the step, and the simulated minutes since the page,
  of the first check of the culprit; None if never checked.
* ``evidence_viewed``: which of the culprit's signals (:data:`SIGNALS`) were viewed, sorted and
  comma-separated ("" for none); ``evidence_coverage``: their share of all signals.
* ``culprit_top1``, ``culprit_top3``: 1 if the culprit is first, or among the first three, of
  the agent's ranking: the services it blamed (declared, handed over as suspect, rolled back),
  latest blame first, then those it checked in the order it first checked them; else 0.
* ``class_correct``: 1 if the last fault class it declared (or handed over) is the task's.
* ``hop_distance``: calls between the service it last blamed and the culprit on the dependency
  graph, either way (0: the culprit; ITBench's proximity); None if it blamed no service.
* ``blame_step``, ``blame_minutes``: the step, and the simulated minutes since the page, of its
  first blame of the culprit; None if it never blamed it.

phase 2 (None when phase 2 was not played, as in ``p1_only``; each also None when the task has
nothing to find, e.g. no bad commit or no fix):

* ``commit_diffed``: 1 if the agent diffed the bad commit, else 0;
* ``bad_file_read``: 1 if it read a file the reference fix changes;
* ``bad_file_edited``: 1 if its proposed patch changes such a file;
* ``bad_function_edited``: 1 if its patch changes a line inside a function the reference fix
  changes (spans in the buggy tree, the one phase 2 shows);
* ``files_read_before_patch``: how many distinct files it read before proposing a patch or
  declaring no change (or before the episode ended).

:func:`partial_repair` reads the grader's partial-repair fields (``fail_to_pass_rate``,
``pass_to_pass_rate``) from a score for the frame's columns beside ``resolved``.
:func:`localisation_scores` folds the columns of a frame into
one number per phase for plots; :func:`diagnosis_summary` reports the field's accuracy
measures (top-1, top-3, class, hops, time to first correct blame) per policy.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from srelib.extras import require
from srelib.env.actions import ActionType

#: The investigation actions aimed at a service, by the signal each shows.
SIGNALS = {ActionType.QUERY_LOGS.value: "logs", ActionType.CHECK_METRICS.value: "metrics",
           ActionType.CHECK_DEPLOY_HISTORY.value: "deploys",
           ActionType.CHECK_DEPENDENCIES.value: "dependencies",
           ActionType.RUN_HEALTH_CHECK.value: "health"}
PHASE1_COLUMNS = ("culprit_rank", "culprit_step", "culprit_minutes", "evidence_coverage",
                  "evidence_viewed", "culprit_top1", "culprit_top3", "class_correct",
                  "hop_distance", "blame_step", "blame_minutes")
PHASE2_COLUMNS = ("commit_diffed", "bad_file_read", "bad_file_edited", "bad_function_edited",
                  "files_read_before_patch")
PARTIAL_REPAIR = ("fail_to_pass_rate", "pass_to_pass_rate")
LOCALISATION_COLUMNS = (*PHASE1_COLUMNS, *PHASE2_COLUMNS)
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
_ENDS_PHASE2 = (ActionType.PROPOSE_PATCH.value, ActionType.DECLARE_NO_CHANGE.value)


def localisation(task: str, mode: str, records: Sequence[Mapping[str, Any]],
                 seed: int | None = None) -> dict[str, Any]:
    """The localisation columns of one episode (see the module doc); with the episode's
    ``seed``, the bad commit is known by the sha that episode showed."""
    from srelib.env.grading.bug_site import bug_site
    from srelib.env.tasks.pools import MODES
    from srelib.env.tasks.lookup import get_scenario

    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid modes: {', '.join(MODES)}")
    columns: dict[str, Any] = dict.fromkeys(LOCALISATION_COLUMNS)
    if mode != "p2_only":
        scenario = get_scenario(task)
        columns.update(phase1_columns(scenario.root_cause_service, records, scenario.fault_class))
    if mode != "p1_only":
        site = bug_site(task)
        if seed is not None and site.bad_commit:
            from dataclasses import replace
            from srelib.env.tasks.surface import EpisodeSurface, suite_key

            shown = EpisodeSurface(suite_key(), seed, get_scenario(task).name).sha(site.bad_commit)
            site = replace(site, bad_commit=shown)
        columns.update(phase2_columns(site, records))
    return columns


def _blame(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``(service, fault class)`` a valid phase-1 record blames, or ``(None, None)``."""
    action = record.get("action") or {}
    kind, params = action.get("action_type"), action.get("parameters") or {}
    if record.get("phase") != 1 or not record.get("valid"):
        return None, None
    if kind == ActionType.DECLARE_ROOT_CAUSE.value:
        return params.get("service"), params.get("fault_class")
    if kind == ActionType.TRANSITION_TO_PHASE2.value:
        belief = params.get("belief")
        if not isinstance(belief, Mapping):
            return None, None
        return belief.get("suspected_service"), belief.get("suspected_fault_class")
    if kind == ActionType.ROLLBACK_DEPLOY.value:
        return action.get("target_service"), None
    return None, None


def hops(a: str, b: str) -> int | None:
    """Calls between services ``a`` and ``b`` on the dependency graph, either way (None if
    either is not a service)."""
    from srelib.env.actions import DEPENDED_BY, DEPENDS_ON

    if a not in DEPENDS_ON or b not in DEPENDS_ON:
        return None
    seen, frontier, k = {a}, [a], 0
    while frontier:
        if b in frontier:
            return k
        frontier = [n for x in frontier for n in (*DEPENDS_ON[x], *DEPENDED_BY[x]) if n not in seen]
        seen.update(frontier)
        k += 1
    return None


def blame_columns(culprit: str, records: Sequence[Mapping[str, Any]], checked: Sequence[str],
                  fault_class: str | None = None) -> dict[str, Any]:
    """``culprit_top1``, ``culprit_top3``, ``class_correct``, ``hop_distance``, ``blame_step``
    and ``blame_minutes`` (see the module doc); ``checked``: the services checked, in order."""
    blamed: list[str] = []
    last_class, first = None, None
    for record in records:
        service, klass = _blame(record)
        if klass is not None:
            last_class = klass
        if not isinstance(service, str) or not service:
            continue
        blamed = [service] + [x for x in blamed if x != service]
        if service == culprit and first is None:
            first = record
    ranking = blamed + [x for x in checked if x not in blamed]
    return {"culprit_top1": int(ranking[:1] == [culprit]),
            "culprit_top3": int(culprit in ranking[:3]),
            "class_correct": None if fault_class is None else int(last_class == fault_class),
            "hop_distance": hops(blamed[0], culprit) if blamed else None,
            "blame_step": None if first is None else first.get("step"),
            "blame_minutes": None if first is None else first.get("minute")}


def phase1_columns(culprit: str, records: Sequence[Mapping[str, Any]],
                   fault_class: str | None = None) -> dict[str, Any]:
    """The phase-1 columns (:data:`PHASE1_COLUMNS`) for the culprit service ``culprit`` and, for
    ``class_correct``, the task's ``fault_class`` (None: not judged)."""
    checked: list[str] = []
    first: Mapping[str, Any] | None = None
    viewed: set[str] = set()
    for record in records:
        action = record.get("action") or {}
        kind = SIGNALS.get(str(action.get("action_type")))
        service = action.get("target_service")
        if record.get("phase") != 1 or not record.get("valid") or kind is None or not service:
            continue
        if service not in checked:
            checked.append(service)
        if service == culprit:
            viewed.add(kind)
            first = first or record
    return {"culprit_rank": checked.index(culprit) + 1 if culprit in checked else None,
            "culprit_step": None if first is None else first.get("step"),
            "culprit_minutes": None if first is None else first.get("minute"),
            "evidence_coverage": len(viewed) / len(SIGNALS),
            "evidence_viewed": ",".join(sorted(viewed)),
            **blame_columns(culprit, records, checked, fault_class)}


def phase2_columns(site: Any, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``commit_diffed``, ``bad_file_read``, ``bad_file_edited``, ``bad_function_edited`` and
    ``files_read_before_patch`` against ``site`` (a :class:`srelib.env.grading.bug_site.BugSite`)."""
    diffed, read, patch = False, [], None
    for record in records:
        action = record.get("action") or {}
        kind, params = action.get("action_type"), action.get("parameters") or {}
        if record.get("phase") != 2 or not record.get("valid"):
            continue
        if kind in _ENDS_PHASE2:
            patch = str((record.get("effect") or {}).get("diff") or params.get("diff") or "")
            break
        if kind == ActionType.READ_FILE.value and _path(params.get("path")) not in read:
            read.append(_path(params.get("path")))
        sha = str(params.get("commit_sha") or "").strip().lower()
        if kind == ActionType.GET_FILE_DIFF.value and site.bad_commit and sha and \
                site.bad_commit.startswith(sha):
            diffed = True
    touched = touched_lines(patch or "")
    has_files = bool(site.files)
    return {"commit_diffed": None if not site.bad_commit else int(diffed),
            "bad_file_read": int(any(p in site.files for p in read)) if has_files else None,
            "bad_file_edited": int(any(p in site.files for p in touched)) if has_files else None,
            "bad_function_edited": int(any(
                f.first_line <= line <= f.last_line for f in site.functions
                for line in touched.get(f.file, ()))) if site.functions else None,
            "files_read_before_patch": len(read)}


def partial_repair(score: Mapping[str, Any] | None) -> dict[str, Any]:
    """The grader's FAIL_TO_PASS and PASS_TO_PASS pass fractions, where the score has them."""
    score = score or {}
    patch = score.get("patch") or {}
    return {k: score.get(k, patch.get(k)) for k in PARTIAL_REPAIR}


def localisation_scores(frame):
    """Per episode of a results frame, ``(phase-1, phase-2)`` localisation in [0, 1]: phase 1
    is ``1 / culprit_rank`` (0 if the culprit was never checked), phase 2 the mean of the
    phase-2 indicators the task has (``commit_diffed``, ``bad_file_read``, ``bad_file_edited``,
    ``bad_function_edited``). NaN where the phase was not played or has nothing to find."""
    require("pandas", "srelib.results.localisation")
    import pandas as pd

    rank = pd.Series(pd.to_numeric(frame["culprit_rank"], errors="coerce"), index=frame.index)
    played = pd.Series(pd.to_numeric(frame["evidence_coverage"], errors="coerce"),
                       index=frame.index).notna()
    phase1 = (1 / rank).fillna(0).where(played)
    found = frame[list(PHASE2_COLUMNS[:4])].apply(pd.to_numeric, errors="coerce")
    return pd.DataFrame({"phase1": phase1, "phase2": found.mean(axis=1, skipna=True)},
                        index=frame.index)


#: The columns of :func:`diagnosis_summary`, after ``policy``.
DIAGNOSIS_SUMMARY = ("episodes", "culprit_top1", "culprit_top3", "class_correct", "hop_distance",
                     "blamed_culprit", "blame_minutes")


def diagnosis_summary(frame, policies: Sequence[str] | None = None):
    """Phase-1 accuracy per policy, as RCA benchmarks report it, over the episodes that played
    phase 1.

    Args:
        frame: A results frame (:func:`srelib.evaluate`, :func:`srelib.load_run`).
        policies: The policies to report, in this order (None: every policy, sorted).

    Returns:
        A DataFrame with ``policy`` and :data:`DIAGNOSIS_SUMMARY`: the shares ``culprit_top1``,
        ``culprit_top3``, ``class_correct`` and ``blamed_culprit`` (the culprit blamed at some
        step), the mean ``hop_distance`` over the episodes that blamed a service, and the median
        ``blame_minutes`` over those that blamed the culprit (NaN where none did).

    Raises:
        KeyError: If a named policy has no episode that played phase 1.
    """
    pd = require("pandas", "srelib.results.localisation")
    numeric = frame[["culprit_top1", "culprit_top3", "class_correct", "hop_distance",
                     "blame_minutes"]].apply(pd.to_numeric, errors="coerce")
    played = numeric[numeric["culprit_top1"].notna()].assign(
        policy=frame["policy"], blamed_culprit=lambda f: f["blame_minutes"].notna().astype(float))
    grouped = played.groupby("policy")
    table = pd.DataFrame({"episodes": grouped.size(),
                          **{c: grouped[c].mean() for c in ("culprit_top1", "culprit_top3",
                                                            "class_correct", "hop_distance",
                                                            "blamed_culprit")},
                          "blame_minutes": grouped["blame_minutes"].median()})
    if policies is not None:
        missing = [p for p in policies if p not in table.index]
        if missing:
            raise KeyError(f"no phase-1 episode of {', '.join(missing)}")
        table = table.loc[list(policies)]
    return table.rename_axis("policy").reset_index()[["policy", *DIAGNOSIS_SUMMARY]]


def touched_lines(diff: str) -> dict[str, set[int]]:
    """Per file, the 1-based lines of the original a patch replaces or deletes, and the lines
    on both sides of each insertion (``bug_site.changed_lines``'s rule, read off a diff)."""
    touched: dict[str, set[int]] = {}
    path, line, replacing = None, 0, False
    for text in diff.splitlines():
        if text.startswith("--- "):
            path = None
        elif text.startswith("+++ "):
            target = text[4:].strip().split("\t")[0]
            path = None if target == "/dev/null" else _path(target.removeprefix("b/"))
            if path is not None:
                touched.setdefault(path, set())
        elif (match := _HUNK.match(text)) and path is not None:
            line, replacing = int(match.group(1)), False
        elif path is None or text[:1] not in ("-", "+", " "):
            continue
        elif text.startswith("-"):
            touched[path].add(line)
            line, replacing = line + 1, True
        elif text.startswith("+"):
            if not replacing:  # an insertion: the lines on both sides
                touched[path].update({line - 1, line})
        else:
            line, replacing = line + 1, False
    return touched


def _path(path: Any) -> str:
    """A repository path as the workspace names it (no leading ``./``)."""
    text = str(path or "").strip()
    return text[2:] if text.startswith("./") else text
