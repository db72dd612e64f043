"""The episode protocol: pools and modes, budget, invalid actions, rewards, observations, leaks."""

import json
import math
import os
from dataclasses import asdict

import pytest

import srelib
from srelib.env import actions as A
from srelib.env.actions import SERVICES
from srelib.env.grading.score import score_trajectory
from srelib.env.tasks.pools import HELDOUT_TASKS, TRAIN_TASKS
from srelib.env.tasks.surface import EpisodeSurface, suite_key
from srelib.env.tasks.ids import resolve, task_id
from srelib.policies import call_reset

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


@pytest.mark.parametrize("task, pool", [(t, p) for p in srelib.POOLS for t in srelib.POOLS[p].tasks])
def test_every_task_in_every_pool_runs_a_scripted_episode(task, pool):
    env = srelib.IncidentEnv()
    obs, info = env.reset(task=task, pool=pool, seed=11)
    assert info == {"task": srelib.task_id(task), "pool": pool, "mode": srelib.POOLS[pool].mode, "seed": 11,
                    "phase": 2 if pool == "B" else 1}
    sc = env.scenario
    if pool == "B":
        check_obs(obs, 2)
        assert env.trajectory[0]["step"] == 0 and env.trajectory[0]["effect"]["oracle"] is True
        assert obs["bad_commit_sha"] == env.state.incident_deploys[sc.root_cause_service]
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
            assert obs["bad_commit_sha"] == env.state.incident_deploys[sc.root_cause_service]
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
    assert isinstance(info["seed"], int) and resolve(info["task"]) in pool_tasks("C")
    again, info2 = srelib.IncidentEnv().reset(pool="C", seed=info["seed"])
    assert again == obs and info2["task"] == info["task"]
    tasks = {resolve(srelib.IncidentEnv().reset(pool="D", seed=s)[1]["task"]) for s in range(20)}
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


def test_joint_declarations_are_not_judged_when_made_and_the_last_one_counts():
    env = srelib.IncidentEnv()
    env.reset(task="aliased_fault", pool="C", seed=1)
    act(env, "check_metrics", "queue")  # the evidence a declaration needs to earn credit
    right = {"root_cause": "queue cache thrash worker", "service": "queue", "fault_class": "cache_thrash"}
    wrong = {"root_cause": "database deadlock", "service": "database", "fault_class": "deadlock"}
    rewards = []
    for params in (wrong, right, right, wrong):
        obs, reward, terminated, *_ = act(env, "declare_root_cause", **params)
        assert not terminated and obs["action_success"] and "replaces" in obs["action_message"] + \
            obs["action_result"]["message"]
        rewards.append(reward)
    assert rewards == [0.0, 0.0, 0.0, 0.0]
    assert "transition_to_phase2" in obs["valid_actions"]
    assert env.trajectory[-1]["effect"]["service"] == "database"
    diagnosis = score_trajectory("aliased_fault", "joint", env.trajectory)["diagnosis"]
    act(env, "declare_root_cause", **right)
    assert score_trajectory("aliased_fault", "joint", env.trajectory)["diagnosis"] > diagnosis


def test_repeats_and_nonsense_targets_earn_nothing():
    env = srelib.IncidentEnv()
    env.reset(task="memory_leak", pool="C", seed=2)
    assert act(env, "view_alerts")[1] == 0
    assert env.step({"action_type": "view_alerts", "target_service": "bogus"})[1] < 0
    assert act(env, "query_logs", "orders", level="ERROR")[1] == 0
    assert act(env, "query_logs", "orders", level="ERROR", limit=40)[1] < 0  # same key parameters
    assert act(env, "query_logs", "orders", level="WARN")[1] == 0
    assert act(env, "check_metrics", "database")[1] == 0
    obs, reward, *_ = env.step({"action_type": "check_metrics", "target_service": "mainframe"})
    assert reward < 0 and not obs["action_success"] and "mainframe" in obs["action_result"]["error"]


def test_remediation_pays_nothing_when_made_and_lets_the_agent_look_again():
    env = srelib.IncidentEnv()
    env.reset(task="cascading_failure", pool="C", seed=2)
    assert act(env, "check_metrics", "auth")[1] == 0
    assert act(env, "check_metrics", "auth")[1] < 0  # nothing changed: a repeat
    for target in ("cache", "orders", "auth", "auth"):  # useless, relief only, the fix, harmful
        assert act(env, "rollback_deploy" if target == "auth" else "restart_service", target)[1] == 0
        assert act(env, "check_metrics", "auth")[1] == 0  # after a remediation it is a new look


def _blind_script(phase: int, k: int) -> dict:
    """A fixed action sequence that is valid on every task: the same actions, the same order."""
    if phase == 2:
        return {"action_type": "list_dir", "parameters": {"path": "."}} if k % 3 else \
            {"action_type": "get_git_log", "parameters": {"n_commits": 1 + k % 4}}
    script = [("view_alerts", None, {})] + [
        (kind, s, {}) for s in SERVICES for kind in ("check_metrics", "query_logs", "run_health_check")]
    script += [("declare_root_cause", None, {"root_cause": "orders memory leak", "service": "orders",
                                             "fault_class": "memory_leak"}),
               ("view_alerts", None, {})]
    if k < len(script):
        kind, target, params = script[k]
        return {"action_type": kind, "target_service": target, "parameters": params}
    return {"action_type": "transition_to_phase2", "parameters": {"belief": {}}}


@pytest.mark.parametrize("pool", ["A", "C"])
def test_step_rewards_before_the_end_are_the_same_on_every_task_and_seed(pool):
    """No reward before the last step depends on the hidden incident: the same actions earn the
    same rewards whatever the task (its culprit, its involved services) and seed."""
    seen = {}
    for task in srelib.POOLS[pool].tasks:
        for seed in (0, 1):
            env = srelib.IncidentEnv()
            obs, _ = env.reset(task=task, pool=pool, seed=seed)
            rewards, k = [], {1: 0, 2: 0}
            while not obs["done"]:
                phase = obs["current_phase"]
                obs, reward, *_ = env.step(_blind_script(phase, k[phase]))
                k[phase] += 1
                rewards.append(reward)
            seen[(task, seed)] = tuple(rewards[:-1])
    assert len(set(seen.values())) == 1, seen


def test_the_return_of_every_episode_is_its_score_so_farming_loses():
    """The last step pays the score minus what was paid before: a reward farm (new log keywords
    until the budget ends) returns its near-zero score, below the reference."""
    from srelib.adversarial.cunning import RewardFarmPolicy
    from srelib.policies.scripted.reference import ReferencePolicy
    from srelib.adversarial.blunt import NullPolicy
    from srelib.analysis.validity import pool_for

    returns = {}
    for make in (ReferencePolicy, RewardFarmPolicy, NullPolicy):
        for task in ("memory_leak", "info_ordering", "circuit_breaker_noop"):
            env, policy = srelib.IncidentEnv(), make()
            obs, _ = env.reset(task=task, pool=pool_for(task), seed=4)
            call_reset(policy, 4, task)  # the reference is handed its answer
            total = 0.0
            while not obs["done"]:
                obs, reward, terminated, truncated, info = env.step(
                    policy(obs, obs["current_phase"], task))
                total += reward
            assert total == pytest.approx(info["score"]["final"], abs=1e-6)
            assert obs["cumulative_reward"] == pytest.approx(info["score"]["final"], abs=1e-6)
            assert env.trajectory[-1]["reward"] == reward
            returns.setdefault(make.name, []).append(total)
    assert max(returns["reward_farm"]) < min(returns["reference"])
    assert max(returns["null"]) < min(returns["reference"])


@pytest.mark.parametrize("pool", list(srelib.POOLS))
def test_reset_refuses_a_task_outside_the_given_pool(pool):
    tasks = srelib.POOLS[pool].tasks
    for task in srelib.TASKS:
        if task in tasks:
            assert srelib.IncidentEnv().reset(task=task, pool=pool, seed=0)[1]["task"] == \
                srelib.task_id(task)
            continue
        with pytest.raises(ValueError, match=f"not in pool {pool}") as caught:
            srelib.IncidentEnv().reset(task=task, pool=pool, seed=0)
        assert all(t in str(caught.value) for t in tasks)


def test_without_pool_or_task_reset_draws_only_train_tasks():
    drawn = {resolve(srelib.IncidentEnv().reset(seed=s)[1]["task"]) for s in range(60)}
    assert drawn == set(TRAIN_TASKS)
    held_out = HELDOUT_TASKS[0]
    assert srelib.IncidentEnv().reset(task=held_out, seed=0)[1]["task"] == \
        srelib.task_id(held_out)  # asked for


def test_invalid_actions_cost_a_step_not_a_minute_and_say_what_is_valid():
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task="memory_leak", pool="C", seed=3)
    minute = obs["time_elapsed_minutes"]
    cases = [
        (42, "must be a dict"),  # a string is read as an action: see the string tests
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
    bad = EpisodeSurface(suite_key(), 6, "memory_leak").sha("a3f7c91")  # as this episode shows it
    assert obs["bad_commit_sha"] == bad and info["phase"] == 2
    assert "orders" in obs["issue"] and "0.90" in obs["issue"]
    assert obs["valid_actions"] == [a.value for a in A.PHASE2_ACTIONS]
    rec = env.trajectory[-1]
    assert rec["phase"] == 1 and rec["effect"]["bad_commit_sha"] == bad
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
    assert obs["bad_commit_sha"] == (expected and EpisodeSurface(suite_key(), 7, "memory_leak").sha(expected))


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
    text = _all_observation_text(task, "D" if srelib.get_scenario(task).heldout else "C")
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


def test_step_accepts_every_spelling_of_valid_actions():
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task="memory_leak", pool="C", seed=3)
    for spelled in [a for a in obs["valid_actions"] if a.startswith(("query_logs", "view_"))]:
        obs, reward, _, _, info = env.step(spelled)
        assert info["valid"], (spelled, info.get("error"))
        name, _, target = spelled.partition(":")
        assert env.trajectory[-1]["action"] == {"action_type": name,
                                                "target_service": target or None,
                                                "parameters": {}}
    env.step('{"action_type": "check_metrics", "target_service": "orders"}')
    assert env.trajectory[-1]["valid"]


def test_unreadable_string_action_is_invalid_with_the_parsers_reason():
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task="memory_leak", pool="C", seed=3)
    obs, reward, terminated, truncated, info = env.step("query_logs:nowhere")
    assert not info["valid"] and reward < 0 and not (terminated or truncated)
    assert "'query_logs:nowhere' is not a valid action now" in info["error"]
    assert "query_logs:orders" in info["error"]
    assert env.trajectory[-1]["action"]["action_type"] == A.PARSE_ERROR
    assert not env.step("propose_patch")[4]["valid"]  # a phase-2 action in phase 1


def test_help_teaches_the_protocol():
    doc = srelib.IncidentEnv.__doc__
    for needle in ("reset(", "step(", "valid_actions", "query_logs:orders", "trajectory",
                   "score"):
        assert needle in doc


def test_clean_parameters_fills_defaults_drops_strangers_and_is_idempotent():
    clean, error = A.clean_parameters("query_logs", {"level": "warn", "limit": 3, "junk": 1})
    assert error is None and clean == {"level": "WARN", "keyword": None, "limit": 3}
    assert A.clean_parameters(A.ActionType.QUERY_LOGS, clean) == (clean, None)
    for action, spec in A.ACTION_SPECS.items():
        required = {n: "x" for n, p in spec.params.items() if p.required}
        clean, error = A.clean_parameters(action, required)
        assert error is None and set(clean) == set(spec.params), action
        assert all(clean[n] == p.default for n, p in spec.params.items() if not p.required)
        assert A.clean_parameters(action, clean) == (clean, None)
    assert A.clean_parameters("list_dir", ["."]) == (None, "parameters must be a dict, got list")
    with pytest.raises(ValueError, match="valid: .*'view_alerts'"):
        A.clean_parameters("no_such_action", {})


def test_the_env_enforces_every_declared_bound_and_choice():
    """What each Param declares (bounds, choices) is exactly what step accepts or refuses."""
    env = srelib.IncidentEnv()
    checked = 0
    for action, spec in A.ACTION_SPECS.items():
        base = {n: "x" for n, p in spec.params.items() if p.required}
        for name, param in spec.params.items():
            cases = [(v, True) for v in (param.minimum, param.maximum) if v is not None]
            cases += [(param.minimum - 1, False)] if param.minimum is not None else []
            cases += [(param.maximum + 1, False)] if param.maximum is not None else []
            if param.choices is not None:
                cases += [(c, True) for c in param.choices] + [(f"not-a-{name}", False)]
            for value, accepted in cases:
                env.reset(task="memory_leak", pool="B" if spec.phase == 2 else "C", seed=1)
                obs, _, _, _, info = act(env, action.value, "cache" if spec.targeted else None,
                                         **{**base, name: value})
                refused = not info["valid"] and f"parameters.{name} " in info["error"]
                assert refused is not accepted, (action, name, value, info.get("error"))
                checked += 1
    assert checked >= 40
