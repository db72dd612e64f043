"""Red team: the shallow-agent battery (srelib.analysis.battery) as a measuring instrument.

Its rules must compute what they claim on hand-built observations, its bars must name what
breaks them, and a planted leak must be caught: the learned rows read a culprit copied into the
summary or into one query's result, the status rules read a loud root. Do-nothing scores 0 on a
real subsample of the generated suite (every 10th task of each split, seed 0, seconds); the
whole battery is ``python bench/battery.py`` and ``srelib tasks audit``. No test here says the
current generator passes: it does not (bench/battery_before.md, issue 44 open).
"""

from __future__ import annotations

import copy
import random

import pytest

from srelib.analysis import battery
from srelib.analysis.battery_evidence import Sight, features
from srelib.env.actions import SERVICES

STRIDE = 10
QUERIES = ("alerts", "logs:orders", "metrics:database")
HEALTHY = dict.fromkeys(SERVICES, "healthy")


@pytest.fixture(scope="module")
def generated():
    return battery.generated_sights(STRIDE)


@pytest.fixture(scope="module")
def rows(generated):
    sights, split = generated
    return {r["row"]: r for r in battery.battery(sights, split, queries=QUERIES,
                                                 models=("logistic",))}


def _sight(statuses: dict, alerts=(), metrics=None, task="t", culprit="database",
           fault_class="deadlock") -> Sight:
    s = Sight(task, 0, culprit, fault_class, True,
              {"incident_title": "", "incident_summary": "", "severity": "SEV2",
               "service_statuses": statuses, "active_alerts_count": len(alerts)})
    s.results["alerts"] = {"alerts": list(alerts)}
    for svc, series in (metrics or {}).items():
        s.results[f"metrics:{svc}"] = {"metrics": series}
    return s


def _alert(service, rule="HighCPU", severity="warning", since="2025-01-15T14:20:00Z"):
    return {"source_service": service, "rule_name": rule, "severity": severity,
            "firing_since": since}


def test_alert_and_status_rules_read_what_they_claim():
    alerts = [_alert("queue"), _alert("orders", severity="critical"), _alert("payment"),
              _alert("payment")]
    s = _sight({**HEALTHY, "auth": "degraded", "cache": "down"}, alerts)
    assert battery.top(battery._first_alert(s)) == ["queue"]
    assert battery.top(battery._most_alerts(s)) == ["payment"]
    assert battery.top(battery._most_severe(s)) == ["orders"]  # one critical beats two warnings
    assert battery.top(battery._worst_status(s)) == ["cache"]
    assert battery.top(battery.RULES[0][2](s)) == []  # do-nothing names nothing
    s.results["deploys:auth"] = {"deploys": [{"timestamp": "2025-01-15T12:00:00Z"}]}
    s.results["deploys:queue"] = {"deploys": [{"timestamp": "2025-01-15T14:00:00Z"}]}
    assert battery.top(battery._newest_deploy(s)) == ["queue"]


def test_status_board_root_is_the_deepest_unhealthy_with_healthy_callees():
    board = {**HEALTHY, "api_gateway": "degraded", "orders": "down", "payment": "degraded"}
    assert battery.top(battery._board_root(_sight(board))) == ["payment"]


def test_pagerank_and_baro_follow_what_they_read():
    ranked = battery._pagerank(_sight(HEALTHY, [_alert("database"), _alert("orders")]))
    assert battery.top(ranked) == ["database"]  # orders' mass flows to what it calls
    flat = [{"cpu": 20.0 + (k % 2) * 0.5, "memory": 40.0, "error_rate": 0.1, "latency_p50": 10.0,
             "latency_p95": 30.0, "latency_p99": 60.0, "rps": 500.0} for k in range(30)]
    jump = [dict(p, error_rate=9.0) if k >= 25 else p for k, p in enumerate(flat)]
    assert battery.top(battery._baro(_sight(HEALTHY, metrics={"auth": flat, "queue": jump}))) == \
        ["queue"]


def test_a_tie_counts_one_over_its_size():
    sights = [_sight(HEALTHY)]
    culprit, _ = battery._accuracy(sights, [battery.Guess(["database", "queue"], None)])
    assert culprit == 0.5


def test_breaches_name_each_bar():
    row = {"row": "r", "culprit": 0.5, "culprit_chance": 1 / 7, "class": 0.2, "class_chance": 0.2,
           "mean": 0.3, "over": 0.2, "no_fault_mean": 0.7}
    found = battery.breaches(row)
    assert len(found) == 4 and found[0].startswith("culprit") and "no-fault" in found[-1]
    assert battery.failures([row])[0].startswith("r: culprit")
    calm = {**row, "culprit": 0.3, "mean": 0.1, "over": 0.05, "no_fault_mean": 0.5}
    assert battery.breaches(calm) == []


def test_battery_needs_both_splits():
    with pytest.raises(ValueError, match="train and held-out"):
        battery.battery([_sight(HEALTHY)], {"t": "train"}, play=False)


def _noise(n: int, leak: bool) -> tuple[list[Sight], dict]:
    """``n`` train and ``n`` held-out hand-built sights with a random culprit; with ``leak`` the
    summary names it, as a generator that copies the culprit onto the first screen would."""
    draw = random.Random(0)
    sights, split = [], {}
    for k in range(2 * n):
        culprit = draw.choice(SERVICES)
        s = _sight(HEALTHY, task=f"t{k}", culprit=culprit, fault_class=draw.choice("ab"))
        if leak:
            s.reset["incident_summary"] = f"errors began near {culprit}"
        sights.append(s)
        split[s.task] = "train" if k < n else "heldout"
    return sights, split


@pytest.mark.parametrize("kind", battery.MODELS)
def test_the_learned_rows_pass_noise_and_catch_a_culprit_copied_onto_the_screen(kind):
    quiet = battery.battery(*_noise(70, leak=False), play=False, queries=(), models=(kind,))
    loud = battery.battery(*_noise(70, leak=True), play=False, queries=(), models=(kind,))
    row = f"{kind} (reset)"
    quiet_row, loud_row = (next(r for r in t if r["row"] == row) for t in (quiet, loud))
    assert quiet_row["culprit"] <= quiet_row["culprit_chance"] + battery.OVER_CHANCE
    assert loud_row["culprit"] >= 0.9 and not loud_row["passes"]


def test_a_planted_leak_in_the_real_suite_is_caught(generated, rows):
    """A toy generator variant: each task's summary names its culprit. The names are masked
    from the text's words but which service a text names is a feature, so the learned row reads
    it; the rules, which never read the summary, do not move."""
    sights, split = generated
    planted = copy.deepcopy(sights)
    for s in planted:
        s.reset["incident_summary"] += f" Suspect: {s.culprit}."
    assert f"incident_summary names {planted[0].culprit} after suspect" in features(planted[0])
    leaked = {r["row"]: r for r in battery.battery(planted, split, play=False, queries=(),
                                                   models=("logistic",))}
    assert leaked["logistic (reset)"]["culprit"] >= 0.9 > rows["logistic (reset)"]["culprit"]
    assert leaked["status-board root"]["culprit"] == rows["status-board root"]["culprit"]


def test_a_leak_in_one_query_is_found_by_the_query_row(generated):
    """The culprit named in one query's result only (orders' logs): the "reset + one query"
    row keeps that query and reads the leak."""
    sights, split = generated
    planted = copy.deepcopy(sights)
    for s in planted:
        s.results["logs:orders"] = {"logs": [{"level": "ERROR", "message": f"see {s.culprit}"}]}
    rows = battery.battery(planted, split, play=False, queries=QUERIES, models=("logistic",))
    row = next(r for r in rows if r["row"].startswith("logistic (reset +"))
    assert row["row"] == "logistic (reset + logs:orders)" and row["culprit"] >= 0.9


def test_a_loud_root_is_caught_by_the_status_rules(generated):
    """A generator that paints the culprit alone red: worst status and the board root name it."""
    sights, split = generated
    planted = copy.deepcopy(sights)
    for s in planted:
        s.reset["service_statuses"] = {**HEALTHY, s.culprit: "down"}
    rows = {r["row"]: r for r in battery.battery(planted, split, play=False, queries=(),
                                                 models=())}
    for name in ("worst status", "status-board root"):
        assert rows[name]["culprit"] == 1.0 and not rows[name]["passes"]


def test_do_nothing_scores_nothing_when_played(rows):
    row = rows["do-nothing"]
    assert row["culprit"] == row["class"] == row["mean"] == row["over"] == 0.0
    assert row["passes"] and row["n"] > 0


def test_the_audit_prints_the_battery_with_verdicts_and_exits_on_tells_only(capsys):
    """``srelib tasks audit`` shows the battery's rows (the current generator fails some) and
    the investigation gap; its status still reports the tell audit alone, which the suite file
    records as clean, because the battery is not enforced yet (issue 44)."""
    from srelib.cli import main
    from srelib.env.tasks.taskgen.suite import generated_suite

    assert generated_suite().tells == []
    assert main(["tasks", "audit", "--suite", "generated", "--stride", "40"]) == 0
    out = capsys.readouterr().out
    assert "shallow-agent battery (generated, every 40th task of each split)" in out
    table = [line for line in out.splitlines() if line.startswith("| do-nothing")]
    assert len(table) == 1 and table[0].rstrip().endswith("| pass    |")
    assert "(reported, not enforced yet); investigation gap (investigator culprit" in out
    with pytest.raises(SystemExit):
        main(["tasks", "audit", "--stride", "0"])
    assert "--stride: must be a whole number from 1" in capsys.readouterr().err
