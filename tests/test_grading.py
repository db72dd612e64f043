"""score_trajectory on hand-built trajectories: what earns credit, what earns nothing."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from srelib.env.actions import SERVICES
from srelib.env.belief import BeliefState
from srelib.env.grading.score import (DIAGNOSIS_PARTS, WEIGHTS, diagnosis_score,
                                r_cross, repair_credit, score_trajectory)
from srelib.env.tasks.pools import oracle_belief
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.phase2.repos import unified_diff
from srelib.env.simulation.scenarios import TASKS

HEALTHY = dict.fromkeys(SERVICES, "healthy")
SICK = {**HEALTHY, "orders": "degraded", "api_gateway": "degraded"}


def rec(phase, action_type, target=None, valid=True, statuses=None, effect=None, **params):
    return {"step": 0, "phase": phase, "minute": 0, "valid": valid, "error": None, "reward": 0.0,
            "action": {"action_type": action_type, "target_service": target, "parameters": params},
            "statuses": statuses or HEALTHY, "effect": effect}


def numbered(records):
    for i, r in enumerate(records, 1):
        r["step"] = i
    return records


def declare(task, text=None, service=None, fault_class=None):
    s = get_scenario(task)
    effect = {"root_cause": s.correct_root_cause if text is None else text,
              "service": s.root_cause_service if service is None else service,
              "fault_class": s.fault_class if fault_class is None else fault_class}
    return rec(1, "declare_root_cause", effect=effect, **effect)


def handoff(belief=None, statuses=None):
    belief = belief or BeliefState()
    return rec(1, "transition_to_phase2", statuses=statuses,
               effect={"belief": asdict(belief), "bad_commit_sha": None}, belief=asdict(belief))


def patch(diff):
    return rec(2, "propose_patch", effect={"diff": diff}, diff=diff)


def viewed(task):
    """The phase-1 step that views the culprit's deploy history (the evidence a declaration needs)."""
    return rec(1, "check_deploy_history", get_scenario(task).root_cause_service)


def perfect(task):
    s = get_scenario(task)
    steps = [rec(1, "view_alerts"), viewed(task)]
    steps += [rec(1, r.split(":")[0], r.split(":")[1]) for r in s.required_remediation]
    steps += [declare(task), handoff(oracle_belief(s))]
    fix = load_repo(s.repo).fix_diff(task)
    steps.append(patch(fix) if fix else rec(2, "declare_no_change", effect={"reason": "intended"}))
    return numbered(steps)


def test_weights_are_the_contract_and_sum_to_one():
    assert WEIGHTS == {"diagnosis": 0.30, "mitigation": 0.25, "repair": 0.35, "efficiency": 0.10}
    assert abs(sum(WEIGHTS.values()) - 1) < 1e-9


@pytest.mark.parametrize("task", ["memory_leak", "circuit_breaker_noop", "info_ordering"])
def test_a_perfect_episode_scores_one(task):
    score = score_trajectory(task, "joint", perfect(task))
    assert score["final"] >= 0.95 and score["repair"] == 1.0 and score["harmful_actions"] == 0
    assert score["counted"][-1] == "efficiency"


def test_breakdown_shape_and_uncounted_components_are_none():
    score = score_trajectory("memory_leak", "p2_only", perfect("memory_leak")[-1:])
    assert set(score) == {"final", "diagnosis", "mitigation", "repair", "efficiency", "counted",
                          "weights", "patch", "declared_no_change", "harmful_actions", "steps",
                          "fail_to_pass_rate", "pass_to_pass_rate"}
    assert score["counted"] == ["repair", "efficiency"]
    assert score["diagnosis"] is None and score["mitigation"] is None
    assert score["final"] == 1.0 and score["patch"]["resolved"] == "full"
    assert score["fail_to_pass_rate"] == score["pass_to_pass_rate"] == 1.0
    assert score_trajectory("memory_leak", "p2_only", [])["fail_to_pass_rate"] is None


def test_doing_nothing_earns_nothing_in_every_mode():
    for mode in ("p1_only", "p2_only", "joint"):
        score = score_trajectory("memory_leak", mode, [])
        assert score["final"] == 0.0 and score["efficiency"] == 0.0
    alerts = numbered([rec(1, "view_alerts", statuses=SICK) for _ in range(40)])
    assert score_trajectory("memory_leak", "joint", alerts)["final"] == 0.0


def test_empty_or_non_applying_patches_repair_nothing():
    for diff in ("", "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-nope\n+yes\n"):
        score = score_trajectory("memory_leak", "p2_only", [patch(diff)])
        assert score["repair"] == 0.0 and score["final"] == 0.0


def test_a_fix_that_breaks_working_behaviour_earns_no_repair():
    tree = dict(load_repo("orders_batch").tree)
    path = "orders/handlers/batch.py"
    sloppy = tree[path].replace("        if order.order_id not in self._cache:\n"
                                "            self._pending.append(order.order_id)\n",
                                "        self._pending.append(order.order_id)\n")
    sloppy = sloppy.replace("            self.notifier.order_placed(order)\n",
                            "            self.notifier.order_placed(order)\n"
                            "            self._cache.pop(order.order_id, None)\n")
    score = score_trajectory("memory_leak", "p2_only", [patch(unified_diff(tree, {**tree, path: sloppy}))])
    f2p, p2p = score["patch"]["FAIL_TO_PASS"], score["patch"]["PASS_TO_PASS"]
    assert any(f2p.values()), "the sloppy fix does fix something"
    assert not all(p2p.values()) and score["patch"]["resolved"] == "no", "a broken PASS_TO_PASS is not partial"
    assert score["repair"] == 0.0
    assert 0 < score["fail_to_pass_rate"] == pytest.approx(sum(f2p.values()) / len(f2p), abs=1e-4)
    assert 1 > score["pass_to_pass_rate"] == pytest.approx(sum(p2p.values()) / len(p2p), abs=1e-4)


def test_repair_credit_grades_within_swe_bench_resolution():
    f2p = {"a": True, "b": False}
    assert repair_credit({"resolved": "full", "FAIL_TO_PASS": {"a": True}, "PASS_TO_PASS": {}}) == 1.0
    assert repair_credit({"resolved": "partial", "FAIL_TO_PASS": f2p, "PASS_TO_PASS": {"c": True}}) == 0.5
    assert repair_credit({"resolved": "no", "FAIL_TO_PASS": f2p,
                          "PASS_TO_PASS": {"c": True, "d": False}}) == 0.0
    assert repair_credit({"resolved": "no", "FAIL_TO_PASS": {"a": False}, "PASS_TO_PASS": {"c": True}}) == 0.0


def test_no_change_scenario_rewards_declaring_no_change_and_no_patch():
    no_change = [rec(2, "declare_no_change", effect={"reason": "backup window"})]
    assert score_trajectory("circuit_breaker_noop", "p2_only", no_change)["repair"] == 1.0
    assert score_trajectory("circuit_breaker_noop", "p2_only", [patch("")])["repair"] == 0.0
    assert score_trajectory("memory_leak", "p2_only", no_change)["repair"] == 0.0
    assert score_trajectory("circuit_breaker_noop", "p2_only", no_change)["declared_no_change"]


def test_diagnosis_uses_whole_words_and_refuses_stuffing():
    s = get_scenario("cascading_failure")
    full = diagnosis_score(s, s.correct_root_cause, s.root_cause_service, s.fault_class)
    assert full == pytest.approx(1.0)
    assert diagnosis_score(s, "authentication configuration deployed cascades", "auth", "config_change") \
        == pytest.approx(0.7), "substrings of keywords earn nothing"
    every = " ".join(SERVICES) + " auth config deploy cascade"
    assert diagnosis_score(s, every, "auth", "config_change") == 0.0
    classes = "auth config deploy cascade: memory leak, deadlock, retry storm, cache thrash"
    assert diagnosis_score(s, classes, "auth", "config_change") == 0.0
    assert diagnosis_score(s, "auth config deploy cascade " * 40, "auth", "config_change") == 0.0
    assert diagnosis_score(s, s.correct_root_cause, "database", "config_change") < 0.7


@pytest.mark.parametrize("task", TASKS)
def test_service_credit_comes_from_the_service_field_only(task):
    s = get_scenario(task)
    text = f"{s.correct_root_cause} ({' '.join(s.keywords)})"
    assert diagnosis_score(s, text, s.root_cause_service, s.fault_class) == pytest.approx(1.0)
    unstructured = diagnosis_score(s, text, None, s.fault_class)
    assert unstructured == pytest.approx(1.0 - DIAGNOSIS_PARTS["service"])
    assert diagnosis_score(s, text, "", s.fault_class) == unstructured


@pytest.mark.parametrize("task", TASKS)
def test_hedging_over_services_in_the_text_costs_credit(task):
    """The issue's hedge: service field empty, the text naming the culprit and one more service,
    every keyword, the right fault class. It can no longer reach the committed answer's credit."""
    s = get_scenario(task)
    keywords = " ".join(s.keywords)
    committed = diagnosis_score(s, keywords, s.root_cause_service, s.fault_class)
    for other in SERVICES:
        if other == s.root_cause_service:
            continue
        hedge = diagnosis_score(s, f"{s.root_cause_service} or {other}: {keywords}", None, s.fault_class)
        assert hedge <= committed - DIAGNOSIS_PARTS["service"] + 1e-9
        assert hedge <= 0.6 + 1e-9


def test_a_declaration_naming_another_suspect_or_class_scores_as_a_wrong_one():
    s = get_scenario("memory_leak")  # involves orders only
    base = diagnosis_score(s, "orders memory leak after the deploy", "orders", "memory_leak")
    assert base == pytest.approx(1.0)
    wrong = diagnosis_score(s, "a payment deadlock", "payment", "deadlock")
    for text, service, fault_class in [
            ("orders memory leak after the deploy, or payment", "orders", "memory_leak"),
            ("orders memory leak or a deadlock after the deploy", "orders", "memory_leak"),
            ("orders memory leak or a deadlock after the deploy", "orders", "deadlock"),
            ("orders leak after the deploy: heap, lock, retry, thrash, pool", "orders", "memory_leak")]:
        assert diagnosis_score(s, text, service, fault_class) <= wrong == 0.0, text
    victims = get_scenario("cascading_failure")  # naming the involved victims is the story
    assert diagnosis_score(victims, "auth config deploy cascade to api_gateway and orders", "auth",
                           "config_change") == pytest.approx(1.0)


def test_the_last_declaration_counts_else_the_handed_over_belief():
    wrong, right = declare("memory_leak", "a database deadlock", "database", "deadlock"), declare("memory_leak")
    look = [viewed("memory_leak"), rec(1, "check_metrics", "database")]
    assert score_trajectory("memory_leak", "p1_only", numbered(look + [right, wrong]))["diagnosis"] == 0.0
    assert score_trajectory("memory_leak", "p1_only", numbered(look + [wrong, right]))["diagnosis"] == 1.0
    belief = BeliefState("orders", "memory_leak", 0.9, 0.9, reasoning="orders memory leak after the deploy")
    assert score_trajectory("memory_leak", "joint", numbered(look + [handoff(belief)]))["diagnosis"] == 1.0


def test_a_declaration_earns_nothing_unless_its_service_evidence_was_viewed_before_it():
    task = "memory_leak"
    blind = numbered([rec(1, "view_alerts"), declare(task), viewed(task)])
    assert score_trajectory(task, "p1_only", blind)["diagnosis"] == 0.0
    elsewhere = numbered([rec(1, "query_logs", "database"), declare(task)])
    assert score_trajectory(task, "p1_only", elsewhere)["diagnosis"] == 0.0
    refused = numbered([{**viewed(task), "valid": False}, declare(task)])
    assert score_trajectory(task, "p1_only", refused)["diagnosis"] == 0.0
    for kind in ("query_logs", "check_metrics", "check_deploy_history"):
        looked = numbered([rec(1, kind, "orders"), declare(task)])
        assert score_trajectory(task, "p1_only", looked)["diagnosis"] == 1.0, kind
    belief = BeliefState("orders", "memory_leak", 0.9, 0.9, reasoning="orders memory leak after the deploy")
    assert score_trajectory(task, "joint", numbered([handoff(belief)]))["diagnosis"] == 0.0


def test_mitigation_needs_the_remediation_and_health_and_harm_costs():
    task = "memory_leak"
    base = [declare(task)]
    rolled = numbered(base + [rec(1, "rollback_deploy", "orders"), handoff(statuses=HEALTHY)])
    assert score_trajectory(task, "joint", rolled)["mitigation"] == 1.0
    still_sick = numbered(base + [rec(1, "rollback_deploy", "orders"), handoff(statuses=SICK)])
    assert 0.5 < score_trajectory(task, "joint", still_sick)["mitigation"] < 1.0
    restart_only = numbered(base + [rec(1, "restart_service", "orders"), handoff()])
    assert score_trajectory(task, "joint", restart_only)["mitigation"] == 0.0
    harmful = numbered(base + [rec(1, "rollback_deploy", "orders"), rec(1, "restart_service", "database"),
                               rec(1, "restart_service", "cache"), handoff()])
    score = score_trajectory(task, "joint", harmful)
    assert score["harmful_actions"] == 2 and score["mitigation"] == 0.5
    invalid = numbered(base + [rec(1, "rollback_deploy", "orders", valid=False), handoff()])
    assert score_trajectory(task, "joint", invalid)["mitigation"] == 0.0


def test_harm_costs_diagnosis_where_no_remediation_is_required():
    task = "circuit_breaker_noop"
    clean = score_trajectory(task, "p1_only", numbered([viewed(task), declare(task)]))
    bad_rollback = score_trajectory(task, "p1_only", numbered([viewed(task), rec(1, "rollback_deploy", "orders"),
                                                               declare(task)]))
    assert clean["mitigation"] is None and clean["diagnosis"] == 1.0
    assert bad_rollback["harmful_actions"] == 1 and bad_rollback["diagnosis"] == 0.75


def test_efficiency_follows_correctness_and_decays_with_extra_steps():
    task = "memory_leak"
    quick = perfect(task)
    slow = numbered([rec(1, "view_alerts") for _ in range(10)] + perfect(task))
    assert score_trajectory(task, "joint", quick)["efficiency"] == 1.0
    assert 0 < score_trajectory(task, "joint", slow)["efficiency"] < 1.0
    half = numbered([declare(task, service="database", fault_class="deadlock")])
    score = score_trajectory(task, "p1_only", half)
    assert score["efficiency"] < 0.5


def test_pool_b_scores_phase_two_only_and_ignores_the_oracle_handoff():
    oracle = {**handoff(oracle_belief(get_scenario("memory_leak"))), "step": 0}
    oracle["effect"]["oracle"] = True
    score = score_trajectory("memory_leak", "p2_only", [oracle, rec(2, "propose_patch", diff="", effect={"diff": ""})])
    assert score["final"] == 0.0 and score["steps"] == {"p1": 0, "p2": 1}


def test_a_json_round_tripped_trajectory_regrades_identically():
    trajectory = perfect("aliased_fault")
    again = json.loads(json.dumps(trajectory))
    assert score_trajectory("aliased_fault", "joint", again) == score_trajectory("aliased_fault", "joint", trajectory)


def test_programmer_misuse_raises_with_the_valid_choices():
    with pytest.raises(ValueError, match="joint"):
        score_trajectory("memory_leak", "both", [])
    with pytest.raises(ValueError, match="memory_leak"):
        score_trajectory("no_such_task", "joint", [])
    with pytest.raises(ValueError):
        score_trajectory("memory_leak", "joint", "not a list")


def test_r_cross():
    assert r_cross(0.8, 0.3) == pytest.approx(0.5)
    assert r_cross(0.2, 0.6) == 0.0
    with pytest.raises(ValueError):
        r_cross(None, 0.1)
