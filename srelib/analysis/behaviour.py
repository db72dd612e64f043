"""Behaviour metrics: how policies act, not only how they score.

Each function takes what it needs, the tidy frame of :func:`srelib.evaluate` (one row per
episode) or a list of :class:`srelib.Episode` records (trajectories included, e.g. from
:func:`srelib.results.store.load_episodes` or :attr:`srelib.analysis.ablations.Ablation.episodes`), and
returns a small DataFrame; :mod:`srelib.plots.behaviour` draws each one (the resolved rates:
:func:`srelib.plots.outcomes.resolved_rates`).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

from srelib.extras import require

#: Phase-1 length buckets ``[a, b)`` for the stopping distribution.
STOP_BINS = (0, 4, 6, 8, 10, 13, 17, 25, math.inf)
#: Phase-2 actions that widen the search: each distinct (action, argument) counts once.
_SEARCH_ACTIONS = ("list_dir", "read_file", "search_code", "get_git_log", "get_file_diff")
RESOLUTIONS = ("full", "partial", "no", "no patch")


def stopping_distribution(frame, bins: Sequence[float] = STOP_BINS):
    """Per policy (rows), the share of episodes whose phase 1 took a number of steps in each
    bucket ``[a, b)`` of ``bins`` (columns)."""
    require("pandas", "srelib.analysis.behaviour")
    import pandas as pd

    labels = [_bucket_label(a, b) for a, b in zip(bins, bins[1:])]
    cut = pd.cut(frame["p1_steps"], bins=list(bins), right=False, labels=labels)
    table = pd.crosstab(frame["policy"], cut, normalize="index")
    return table.reindex(columns=labels, fill_value=0.0)


def stopping_kl(frame, bins: Sequence[float] = STOP_BINS, *, smoothing: float = 1e-6):
    """KL(P_row ‖ Q_column) in nats between the policies' stopping distributions, each
    bucket smoothed by ``smoothing`` and renormalised (so an empty bucket stays finite)."""
    require("pandas", "srelib.analysis.behaviour")
    import pandas as pd

    dist = stopping_distribution(frame, bins) + smoothing
    dist = dist.div(dist.sum(axis=1), axis=0)
    names = list(dist.index)
    return pd.DataFrame([[kl_divergence(dist.loc[p], dist.loc[q]) for q in names] for p in names],
                        index=pd.Index(names, name="P"), columns=pd.Index(names, name="Q"))


def kl_divergence(p: Iterable[float], q: Iterable[float]) -> float:
    """Σ p log(p / q) over the entries where p > 0 (q must be > 0 there)."""
    return float(sum(a * math.log(a / b) for a, b in zip(p, q) if a > 0))


def first_positions(episodes) -> "object":
    """Per policy and action type: the share of episodes that used it, and the mean and median
    position (1 = the first agent step) of its first use in those episodes."""
    require("pandas", "srelib.analysis.behaviour")
    import pandas as pd

    firsts = []
    for episode in episodes:
        seen: dict[str, int] = {}
        for position, record in enumerate(_agent_steps(episode), 1):
            seen.setdefault(_kind(record), position)
        firsts += [{"policy": episode.policy, "action_type": k, "position": v}
                   for k, v in seen.items()]
    counts = _episode_counts(episodes)
    if not firsts:
        return pd.DataFrame(columns=["policy", "action_type", "share", "mean_position",
                                     "median_position"])
    table = (pd.DataFrame(firsts).groupby(["policy", "action_type"])["position"]
             .agg(n="size", mean_position="mean", median_position="median").reset_index())
    table.insert(2, "share", table["n"] / table["policy"].map(counts))
    return table.drop(columns="n").sort_values(["policy", "mean_position"], ignore_index=True)


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool],
                               bins: int = 10) -> float:
    """ECE = Σ_b (n_b / N) |mean confidence_b − accuracy_b| over ``bins`` equal-width buckets of
    [0, 1] (a confidence of 1 falls in the last bucket). NaN for no samples."""
    return _calibration_rows(confidences, correct, bins)[1]


def calibration(episodes, bins: int = 10):
    """The handed-over service confidence against whether the handed-over service was right.

    Returns ``(reliability, ece)``: per policy and bucket, n, mean confidence and accuracy (the
    reliability diagram's points); and per policy, n and ECE. Episodes without an agent handoff
    (pool B, phase 1 never finished) are left out.
    """
    require("pandas", "srelib.analysis.behaviour")
    import pandas as pd

    points, scores = [], []
    by_policy: dict[str, tuple[list[float], list[bool]]] = {}
    for episode in episodes:
        handoff = _agent_handoff(episode)
        if handoff is None:
            continue
        confs, hits = by_policy.setdefault(episode.policy, ([], []))
        confs.append(_number(handoff.get("service_confidence")))
        hits.append(handoff.get("suspected_service") in _scenario(episode).acceptable_services)
    for policy, (confs, hits) in by_policy.items():
        rows, ece = _calibration_rows(confs, hits, bins)
        points += [{"policy": policy, **row} for row in rows]
        scores.append({"policy": policy, "n": len(confs), "ece": ece})
    return (pd.DataFrame(points, columns=["policy", "bin", "n", "confidence", "accuracy"]),
            pd.DataFrame(scores, columns=["policy", "n", "ece"]))


def search_breadth(episodes):
    """Per episode with an agent handoff: the handed-over fault confidence and how widely phase 2
    searched (distinct list/read/search/log/diff actions). ``breadth_correlation`` summarises."""
    require("pandas", "srelib.analysis.behaviour")
    import pandas as pd

    rows = []
    for episode in episodes:
        handoff = _agent_handoff(episode)
        if handoff is None:
            continue
        distinct = {(_kind(r), repr(sorted((r.get("action") or {}).get("parameters", {}).items())))
                    for r in _agent_steps(episode) if r.get("phase") == 2
                    and _kind(r) in _SEARCH_ACTIONS}
        rows.append({"policy": episode.policy, "task": episode.public_task, "seed": episode.seed,
                     "fault_confidence": _number(handoff.get("fault_confidence")),
                     "breadth": len(distinct)})
    return pd.DataFrame(rows, columns=["policy", "task", "seed", "fault_confidence", "breadth"])


def breadth_correlation(breadth):
    """Per policy: n and the Pearson correlation of fault confidence with search breadth (NaN
    where either is constant)."""
    require("pandas", "srelib.analysis.behaviour")
    import pandas as pd

    rows = []
    for policy, group in breadth.groupby("policy", sort=True):
        r = math.nan
        if group["fault_confidence"].nunique() > 1 and group["breadth"].nunique() > 1:
            r = float(group["fault_confidence"].corr(group["breadth"]))
        rows.append({"policy": policy, "n": len(group), "pearson_r": r})
    return pd.DataFrame(rows, columns=["policy", "n", "pearson_r"])


def resolved_rates(frame):
    """Per policy (rows), the share of its episodes with a phase 2 whose patch resolved
    ``full``, ``partial`` or ``no`` (SWE-bench's meaning), or that proposed no patch; from the
    frame's ``resolved`` column. :func:`srelib.plots.outcomes.resolved_rates` draws it."""
    require("pandas", "srelib.analysis.behaviour")
    import pandas as pd

    phase2 = frame[frame["mode"] != "p1_only"]
    outcome = phase2["resolved"].fillna("no patch")
    table = pd.crosstab(phase2["policy"], outcome, normalize="index")
    return table.reindex(columns=list(RESOLUTIONS), fill_value=0.0)


def harmful_actions(episodes):
    """Per policy and harmful action (``"action:service"``: a remediation of an uninvolved
    service, or a rollback the incident does not call for): how often it was taken, and in how
    many episodes."""
    require("pandas", "srelib.analysis.behaviour")
    import pandas as pd

    from srelib.env.grading.score import harmful_remediations

    rows = [{"policy": e.policy, "action": action, "episode": (e.task, e.pool, e.seed)}
            for e in episodes if e.mode != "p2_only"
            for action in harmful_remediations(_scenario(e), e.steps)]
    if not rows:
        return pd.DataFrame(columns=["policy", "action", "count", "episodes"])
    return (pd.DataFrame(rows).groupby(["policy", "action"])
            .agg(count=("episode", "size"), episodes=("episode", "nunique"))
            .reset_index().sort_values(["policy", "count"], ascending=[True, False],
                                       ignore_index=True))


# ── helpers ────────────────────────────────────────────────────────────────────────────────


def _calibration_rows(confidences, correct, bins: int) -> tuple[list[dict], float]:
    if bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    pairs = [(min(max(float(c), 0.0), 1.0), bool(h)) for c, h in zip(confidences, correct)]
    if not pairs:
        return [], math.nan
    buckets: dict[int, list[tuple[float, bool]]] = {}
    for conf, hit in pairs:
        buckets.setdefault(min(int(conf * bins), bins - 1), []).append((conf, hit))
    rows, ece = [], 0.0
    for index in sorted(buckets):
        members = buckets[index]
        conf = sum(c for c, _ in members) / len(members)
        accuracy = sum(h for _, h in members) / len(members)
        ece += len(members) / len(pairs) * abs(conf - accuracy)
        rows.append({"bin": index, "n": len(members), "confidence": conf, "accuracy": accuracy})
    return rows, ece


def _agent_steps(episode) -> list[dict]:
    """The records of actions the agent chose (pool B's automatic handoff is not one)."""
    return [r for r in episode.steps if int(r.get("step") or 0) > 0]


def _agent_handoff(episode) -> dict | None:
    """The belief the agent handed over (a phase-2-only episode's handoff is the oracle's)."""
    return None if episode.mode == "p2_only" else episode.handoff


def _kind(record: dict) -> str:
    return str((record.get("action") or {}).get("action_type"))


def _number(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _scenario(episode):
    from srelib.env.tasks.lookup import get_scenario

    return get_scenario(episode.task)


def _episode_counts(episodes) -> dict[str, int]:
    counts: dict[str, int] = {}
    for episode in episodes:
        counts[episode.policy] = counts.get(episode.policy, 0) + 1
    return counts


def _bucket_label(a: float, b: float) -> str:
    return f"{a:g}+" if math.isinf(b) else f"{a:g}-{b - 1:g}"
