"""The investigator (srelib.policies.scripted.investigator): the evidence-following phase-1
baseline, handed no answer. Its reading of a metric history on hand-built series, of its
victims' logs on hand-built lines, and a whole classic episode it plays end to end."""

from __future__ import annotations

import srelib
from srelib import scripted_policy
from srelib.policies.scripted.investigator import NAMED_LINES, InvestigatorPolicy, onset


def _points(n=20, **changes):
    """``n`` flat metric points; ``changes``: metric -> (from index, new value)."""
    base = {"cpu": 20.0, "memory": 40.0, "error_rate": 0.1, "latency_p95": 30.0,
            "latency_p99": 60.0, "rps": 500.0}
    return [{"minute": k - n, **{m: (changes[m][1] if m in changes and k >= changes[m][0] else v)
                                 for m, v in base.items()}} for k in range(n)]


def test_onset_is_where_metrics_stay_changed():
    assert onset(_points()) == (None, set())
    assert onset(_points(memory=(12, 60.0), rps=(15, 900.0))) == (-8, {"memory", "rps"})
    blip = _points()
    blip[10]["error_rate"] = 9.0  # one bad point that recovers is no onset
    assert onset(blip) == (None, set())
    assert onset(_points(n=6, cpu=(3, 90.0))) == (None, set())  # too short to judge


def test_victims_logs_name_the_next_hop_only_in_warnings_and_errors():
    policy = InvestigatorPolicy()
    policy._statuses = {"orders": "degraded"}
    error = {"level": "ERROR", "message": "timeout calling to payment after 3 s"}
    info = {"level": "INFO", "message": "request to database served"}
    policy._logs = {"orders": [error] * NAMED_LINES + [info] * 10}
    named = policy._named()
    assert named["payment"] == NAMED_LINES and named["database"] == 0
    policy._logs = {"orders": [error] * (NAMED_LINES - 1)}  # a few stray mentions are noise
    assert policy._named()["payment"] == 0


def test_it_plays_a_classic_incident_to_the_answer_with_valid_actions_only(tmp_path):
    """memory_leak: the leak shows in orders' own memory; it reads the evidence, rolls back,
    declares orders / memory_leak and hands over, every action valid."""
    frame = srelib.evaluate({"investigator-partial-revert":
                             scripted_policy("investigator-partial-revert")},
                            tasks=["memory_leak"], pools=["C"], seeds=1, out=tmp_path / "run",
                            progress=False)
    row = frame.iloc[0]
    assert row["error"] is None and (row["culprit_top1"], row["class_correct"]) == (1, 1)
    episode = srelib.results.load_episodes(tmp_path / "run")[0]
    phase1 = [r for r in episode.steps if r["phase"] == 1]
    assert all(r["valid"] for r in phase1)
    kinds = [r["action"]["action_type"] for r in phase1]
    assert kinds[0] == "view_alerts" and "query_logs" in kinds and "rollback_deploy" in kinds
    assert kinds[-2:] == ["declare_root_cause", "transition_to_phase2"]
