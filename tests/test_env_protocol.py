"""The episode protocol: pools and modes, budget, invalid actions, rewards, observations, leaks."""

import json
import math
import os
from dataclasses import asdict

import pytest

import srelib
from srelib.env import actions as A
from srelib.env.actions import SERVICES

OBS_KEYS = {
    "incident_title", "incident_summary", "severity", "current_phase", "time_elapsed_minutes",
    "steps_taken", "max_steps", "steps_remaining", "action_result", "action_success",
    "action_message", "service_statuses", "active_alerts_count", "valid_actions",
    "available_services", "current_reward", "cumulative_reward", "done",
}
PHASE2_KEYS = {"bad_commit_sha", "issue", "file_tree"}
RECORD_KEYS = {"step", "phase", "minute", "action", "valid", "error", "reward", "statuses", "effect"}
INFO_KEYS = {"task", "pool", "mode", "seed", "phase"}


def act(env, action_type, target=None, **params):
    return env.step({"action_type": action_type, "target_service": target, "parameters": params})


def oracle_transition(env):
    belief = asdict(srelib.oracle_belief(env.scenario))
    return act(env, "transition_to_phase2", belief=belief)


def check_obs(obs, phase):
    assert set(obs) == OBS_KEYS | (PHASE2_KEYS if phase == 2 else set())
    assert obs["current_phase"] == phase
    assert list(obs["service_statuses"]) == list(SERVICES)
    assert obs["available_services"] == list(SERVICES)
    assert obs["steps_taken"] + obs["steps_remaining"] == obs["max_steps"] or obs["done"]
    json.dumps(obs, allow_nan=False)


def pool_tasks(pool):
    return srelib.POOLS[pool].tasks


@pytest.mark.parametrize("pool", ["A", "B", "C", "D"])
@pytest.mark.parametrize("task", srelib.TASKS)
def test_every_task_in_every_pool_runs_a_scripted_episode(task, pool):
    env = srelib.IncidentEnv()
    obs, info = env.reset(task=task, pool=pool, seed=11)
    assert info == {"task": task, "pool": pool, "mode": srelib.POOLS[pool].mode, "seed": 11,
                    "phase": 2 if pool == "B" else 1}
    sc = env.scenario
    if pool == "B":
        check_obs(obs, 2)
        assert env.trajectory[0]["step"] == 0 and env.trajectory[0]["effect"]["oracle"] is True
        assert obs["bad_commit_sha"] == env._infra.incident_deploys[SERVICES.index(sc.root_cause_service)]
        steps = [("list_dir", {"path": "."}), ("get_git_log", {"n_commits": 5}),
                 ("declare_no_change", {"reason": "scripted"})]
    else:
        check_obs(obs, 1)
        steps = [("view_alerts", {}), ("check_deploy_history", {}),
                 ("declare_root_cause", {"root_cause": "scripted", "service": sc.root_cause_service,
                                         "fault_class": sc.fault_class})]
        if pool != "A":
            steps += [("transition", {}), ("list_dir", {"path": "."}), ("declare_no_change", {"reason": "x"})]
    for k, (name, params) in enumerate(steps):
        if name == "transition":
            obs, reward, terminated, truncated, info = oracle_transition(env)
            assert obs["bad_commit_sha"] == env._infra.incident_deploys[SERVICES.index(sc.root_cause_service)]
            assert obs["file_tree"] == sorted(obs["file_tree"]) and obs["issue"]
        else:
            target = sc.root_cause_service if name == "check_deploy_history" else None
            obs, reward, terminated, truncated, info = act(env, name, target, **params)
        assert obs["action_success"], obs["action_message"]
        assert reward == obs["current_reward"]
        check_obs(obs, info["phase"])
        last = k == len(steps) - 1
        assert terminated is last and truncated is False and obs["done"] is last
        assert set(info) >= INFO_KEYS | {"valid"}
    assert "score" in info and info["ended_by"] in ("declare_root_cause", "declare_no_change")
    for rec in env.trajectory:
        assert set(rec) == RECORD_KEYS
    json.dumps(env.trajectory, allow_nan=False)


def test_bad_input_to_reset_names_the_valid_choices():
    env = srelib.IncidentEnv()
    with pytest.raises(ValueError, match="memory_leak"):
        env.reset(task="nope")
    with pytest.raises(ValueError, match="'A', 'B', 'C', 'D'"):
        env.reset(pool="Z")
    with pytest.raises(ValueError, match="p1_only"):
        env.reset(mode="both")
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed="7")
    with pytest.raises(RuntimeError):
        srelib.IncidentEnv().step({"action_type": "view_alerts"})


def test_seed_none_draws_and_reports_a_reproducible_seed():
    env = srelib.IncidentEnv()
    obs, info = env.reset(pool="C")
    assert isinstance(info["seed"], int) and info["task"] in pool_tasks("C")
    again, info2 = srelib.IncidentEnv().reset(pool="C", seed=info["seed"])
    assert again == obs and info2["task"] == info["task"]
    tasks = {srelib.IncidentEnv().reset(pool="D", seed=s)[1]["task"] for s in range(20)}
    assert tasks == set(pool_tasks("D"))
    assert srelib.IncidentEnv().reset(seed=3)[1]["mode"] == "joint"


def test_pool_a_has_no_transition_and_declare_ends_it():
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task="memory_leak", pool="A", seed=1)
    assert "transition_to_phase2" not in obs["valid_actions"]
    obs, reward, terminated, truncated, info = oracle_transition(env)
    assert not info["valid"] and "phase 1 only" in info["error"] and reward < 0
    obs, reward, terminated, *_ = act(env, "declare_root_cause", root_cause="leak in orders",
                                      service="orders", fault_class="memory_leak")
    assert terminated and reward > 0
    assert env.trajectory[-1]["effect"] == {"root_cause": "leak in orders", "service": "orders",
                                            "fault_class": "memory_leak"}


def test_joint_declare_is_recorded_and_cannot_be_farmed():
    env = srelib.IncidentEnv()
    env.reset(task="aliased_fault", pool="C", seed=1)
    rewards = []
    for target in ("x", "y", "queue"):
        obs, reward, terminated, *_ = env.step({
            "action_type": "declare_root_cause", "target_service": target,
            "parameters": {"root_cause": "queue cache thrash worker", "service": "queue",
                           "fault_class": "cache_thrash"}})
        assert not terminated and obs["action_success"]
        rewards.append(reward)
    assert rewards[0] > 0 and all(r < 0 for r in rewards[1:])
    assert "transition_to_phase2" in obs["valid_actions"]


def test_repeats_and_nonsense_targets_earn_nothing():
    env = srelib.IncidentEnv()
    env.reset(task="memory_leak", pool="C", seed=2)
    first = act(env, "view_alerts")[1]
    assert first > 0
    assert env.step({"action_type": "view_alerts", "target_service": "bogus"})[1] < 0
    assert act(env, "query_logs", "orders", level="ERROR")[1] > 0
    assert act(env, "query_logs", "orders", level="ERROR", limit=40)[1] < 0  # same key parameters
    assert act(env, "query_logs", "orders", level="WARN")[1] > 0
    assert act(env, "check_metrics", "database")[1] == 0  # valid but uninvolved
    obs, reward, *_ = env.step({"action_type": "check_metrics", "target_service": "mainframe"})
    assert reward < 0 and not obs["action_success"] and "mainframe" in obs["action_result"]["error"]


def test_remediation_reward_follows_what_it_did():
    env = srelib.IncidentEnv()
    env.reset(task="cascading_failure", pool="C", seed=2)
    assert act(env, "restart_service", "cache")[1] < 0  # nothing to fix there
    assert act(env, "restart_service", "orders")[1] < 0  # only relief while auth is broken
    assert act(env, "rollback_deploy", "auth")[1] > 0
    assert act(env, "rollback_deploy", "auth")[1] <= -0.2  # a good deploy this time: harmful


def test_invalid_actions_cost_a_step_not_a_minute_and_say_what_is_valid():
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task="memory_leak", pool="C", seed=3)
    minute = obs["time_elapsed_minutes"]
    cases = [
        ("not a dict", "must be a dict"),
        ({"action_type": "fly"}, "unknown action_type"),
        ({"action_type": "read_file", "parameters": {"path": "x"}}, "phase-2 action"),
        ({"action_type": "query_logs"}, "needs a target_service"),
        ({"action_type": "query_logs", "target_service": 5}, "unknown target_service"),
        ({"action_type": "query_logs", "target_service": "orders", "parameters": {"limit": "9"}}, "must be int"),
        ({"action_type": "query_logs", "target_service": "orders", "parameters": {"limit": 0}}, "between 1 and 50"),
        ({"action_type": "query_logs", "target_service": "orders", "parameters": {"level": "LOUD"}}, "level"),
        ({"action_type": "scale_service", "target_service": "orders", "parameters": {"replicas": True}}, "int"),
        ({"action_type": "rollback_deploy", "target_service": "cache", "parameters": []}, "must be a dict"),
        ({"action_type": "declare_root_cause", "parameters": {"root_cause": " "}}, "non-empty"),
        ({"action_type": "declare_root_cause", "parameters": {"root_cause": "x", "fault_class": "gremlins"}},
         "fault_class"),
        ({"action_type": "transition_to_phase2", "parameters": {"belief": "orders"}}, "belief"),
        ({"action_type": "transition_to_phase2", "parameters": {"belief": {"service_confidence": math.nan}}},
         "service_confidence"),
        ({"action_type": A.PARSE_ERROR, "parameters": {"reason": "no JSON found"}},
         "Your reply could not be parsed as an action: no JSON found"),
    ]
    for k, (action, needle) in enumerate(cases, start=1):
        obs, reward, terminated, truncated, info = env.step(action)
        assert not info["valid"] and needle in info["error"], (action, info["error"])
        assert obs["action_result"]["error"] == info["error"]
        assert "view_alerts" in obs["action_result"]["valid_actions_hint"]
        assert reward == obs["current_reward"] < 0 and not (terminated or truncated)
        assert obs["steps_taken"] == k and obs["time_elapsed_minutes"] == minute
        check_obs(obs, 1)
    assert env.trajectory[-1]["action"]["action_type"] == A.PARSE_ERROR
    assert not env.trajectory[-1]["valid"]
    json.dumps(env.trajectory, allow_nan=False)


def test_budget_truncates_and_after_done_is_inert():
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task="info_ordering", pool="C", seed=4)
    budget = obs["max_steps"]
    for k in range(budget):
        action = {"action_type": "view_alerts"} if k % 2 else {"action_type": "???"}
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs["steps_remaining"] == budget - k - 1
        assert truncated is (k == budget - 1) and not terminated
    assert obs["done"] and obs["valid_actions"] == [] and info["ended_by"] == "budget" and "score" in info
    cumulative = obs["cumulative_reward"]
    obs, reward, terminated, truncated, info = env.step({"action_type": "view_alerts"})
    assert (reward, terminated, truncated) == (0.0, False, True) and not info["valid"]
    assert obs["cumulative_reward"] == cumulative and len(env.trajectory) == budget


def test_give_up_ends_the_episode_as_truncated():
    env = srelib.IncidentEnv()
    env.reset(task="memory_leak", pool="C", seed=5)
    obs, reward, terminated, truncated, info = env.step(
        {"action_type": A.GIVE_UP, "parameters": {"reason": "3 parse failures"}})
    assert truncated and not terminated and info["ended_by"] == "give_up" and obs["done"]


def test_phase2_protocol():
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task="memory_leak", pool="C", seed=6)
    assert not PHASE2_KEYS & set(obs)
    obs, reward, terminated, truncated, info = act(env, "transition_to_phase2", belief={
        "suspected_service": "orders", "suspected_fault_class": "memory_leak",
        "service_confidence": 0.9, "fault_confidence": 0.6, "reasoning": "heap climbs"})
    check_obs(obs, 2)
    assert obs["bad_commit_sha"] == "a3f7c91" and info["phase"] == 2
    assert "orders" in obs["issue"] and "0.90" in obs["issue"]
    assert obs["valid_actions"] == [a.value for a in A.PHASE2_ACTIONS]
    rec = env.trajectory[-1]
    assert rec["phase"] == 1 and rec["effect"]["bad_commit_sha"] == "a3f7c91"
    assert rec["effect"]["belief"]["suspected_service"] == "orders"
    assert act(env, "view_alerts")[2] is False and not env.trajectory[-1]["valid"]
    assert not oracle_transition(env)[4]["valid"]  # only once
    obs, reward, *_ = act(env, "read_file", path="../../etc/passwd")
    assert not obs["action_success"] and reward < 0 and env.trajectory[-1]["valid"]
    obs, reward, terminated, truncated, info = act(env, "propose_patch", diff="")
    if obs["action_success"]:
        assert terminated and env.trajectory[-1]["effect"] == {"diff": ""} and "score" in info


@pytest.mark.parametrize("belief, expected", [
    ({"suspected_service": "auth"}, None),  # auth's latest deploy is not in this repository
    ({}, None),
    ({"suspected_service": "orders"}, "a3f7c91"),
])
def test_bad_commit_sha_follows_the_belief(belief, expected):
    env = srelib.IncidentEnv()
    env.reset(task="memory_leak", pool="C", seed=7)
    act(env, "rollback_deploy", "orders")  # the incident's deploy is still what is handed over
    obs = act(env, "transition_to_phase2", belief=belief)[0]
    assert obs["bad_commit_sha"] == expected


def _all_observation_text(task, pool):
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task=task, pool=pool, seed=8)
    seen = [obs]
    if pool != "B":
        seen.append(act(env, "view_alerts")[0])
        for svc in SERVICES:
            for name in ("query_logs", "check_metrics", "check_deploy_history", "run_health_check",
                         "check_dependencies"):
                seen.append(act(env, name, svc)[0])
        if pool == "C":
            seen.append(oracle_transition(env)[0])
    return json.dumps(seen)


@pytest.mark.parametrize("task", srelib.TASKS)
def test_no_hidden_state_leaks(task):
    text = _all_observation_text(task, "C")
    phase1, _, phase2 = text.partition('"current_phase": 2')
    sc = srelib.get_scenario(task)
    for needle in ("is_bad", '"bad"', "active_fault", "fault_count", "residual", "cleared_by",
                   "bad_commit", "oracle", os.getcwd(), "/tmp/", "site-packages"):
        assert needle not in phase1, needle
    for cond in sc.conditions:
        assert cond.id not in text
    assert sc.correct_root_cause not in text
    for needle in (os.getcwd(), "/tmp/", "site-packages"):
        assert needle not in phase2
