"""The validity gate through the real environment (every gate policy within its bound on every
task it is judged on, and the shortcut policies able to exploit what they target), pool B's
handoff, seed compatibility and re-grading saved trajectories."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from srelib.env.core import IncidentEnv
from srelib.env.grading.score import score_trajectory
from srelib.env.tasks.pools import POOLS, oracle_belief
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.simulation.scenarios import TASKS
from srelib.env.tasks.surface import EpisodeSurface, suite_key
from srelib.adversarial.cunning import (RELEASE_TAG, BlindRevertPolicy, MemoriseTrainPolicy,
                                         RewardProbePolicy, class_from_description, train_answers)
from srelib.policies import call_reset
from srelib.adversarial.hijack import HIJACK_POLICIES
from srelib.policies.scripted.reference import ReferencePolicy
from helpers import SEED_POLICIES, load_seed_policies
from srelib.adversarial.blunt import AlwaysNoChangePolicy
from srelib.adversarial.cunning import HedgedDeclarationPolicy
from srelib.analysis.validity import (GATE, GATE_METRIC, GATE_POOLS, format_validity_summary,
                                      format_validity_table, gate_cells, play, pool_for,
                                      validity_table)


@pytest.fixture(scope="module")
def gate_rows():
    return validity_table()


@pytest.mark.parametrize("cls", [pytest.param(cls, id=cls.name) for cls in GATE])
def test_gate_policy_stays_within_its_bound_on_every_task(gate_rows, cls):
    rows = [r for r in gate_rows if r["policy"] == cls.name]
    cells = gate_cells(cls)
    assert [(r["task"], r["pool"]) for r in rows if not r["task"].startswith("(")] == cells
    assert len(rows) == len(cells) + (cls is AlwaysNoChangePolicy)
    failed = [r for r in rows if not r["ok"]]
    assert not failed, failed


def test_reference_scores_high_and_the_summary_has_one_line_per_policy(gate_rows, capsys):
    with capsys.disabled():
        print("\n" + format_validity_table(gate_rows) + "\n\n" + format_validity_summary(gate_rows))
    reference = [r["score"] for r in gate_rows if r["policy"] == ReferencePolicy.name]
    assert len(reference) == len(TASKS) and min(reference) >= 0.95
    summary = format_validity_summary(gate_rows).splitlines()[2:]
    assert [line.split(" | ")[0].strip("| ") for line in summary] == [cls.name for cls in GATE]


def test_each_shortcut_is_judged_where_it_is_strongest():
    assert {t for t, p in gate_cells(HedgedDeclarationPolicy)} == set(POOLS["A"].tasks)
    assert gate_cells(MemoriseTrainPolicy) == [(t, "D") for t in POOLS["D"].tasks]
    for cls in HIJACK_POLICIES.values():
        assert GATE[cls] == ("max", 0.15) and GATE_METRIC[cls] == "repair" and GATE_POOLS[cls] == "B"
    assert gate_cells(ReferencePolicy) == [(t, pool_for(t)) for t in TASKS]
    with pytest.raises(ValueError, match="not gate policies"):
        validity_table(policies=[dict])


def test_reward_probe_exploits_rewards_that_leak():
    """Fed the rewards of an environment that leaks (a bonus for the involved service, a
    judged declaration), the probe finds and remembers the answer: it is not a strawman."""
    probe = RewardProbePolicy()

    def obs(reward, step, done=False):
        return {"current_reward": reward, "steps_taken": step, "done": done,
                "valid_actions": [], "action_result": {}}

    def episode(declared_reward):
        probe.reset(seed=0, task_name="t")
        actions = [probe(obs(0.0, 0), 1, "t")]
        for k in range(1, 8):
            leak = 0.03 if actions[-1]["target_service"] == "payment" else 0.0
            actions.append(probe(obs(leak, k), 1, "t"))
        handoff = probe(obs(declared_reward, 8), 1, "t")
        return actions[-1], handoff

    declared, handoff = episode(0.2)  # the service was right, the class was not
    assert declared["parameters"]["service"] == "payment"
    assert handoff["parameters"]["belief"]["suspected_service"] == "payment"
    first_class = declared["parameters"]["fault_class"]
    declared, handoff = episode(0.3)
    assert declared["parameters"]["fault_class"] != first_class
    right = declared["parameters"]["fault_class"]
    declared, _ = episode(0.0)
    assert (declared["parameters"]["service"], declared["parameters"]["fault_class"]) == ("payment", right)


def test_memorise_train_replays_train_answers_by_incident_text():
    assert set(train_answers()) == {f"{get_scenario(t).title}\n{get_scenario(t).summary}"
                                    for t in POOLS["C"].tasks}
    assert play(MemoriseTrainPolicy(), "memory_leak", 0)["final"] >= 0.95  # memorising works on train


def test_shortcut_rules_read_what_they_claim():
    assert RELEASE_TAG.search("Feature: batch order processing (v2.3.1)")
    assert RELEASE_TAG.search("release-4.2: cut") and RELEASE_TAG.search("bump to 1.4.2")
    assert not RELEASE_TAG.search("README: mention the batch handler")
    assert class_from_description("Resilience: increase auth-client retries") == "retry_storm"
    assert class_from_description("deps: bump the serializer library") == "shared_dependency"
    assert class_from_description("Tidy imports") is None


@pytest.mark.parametrize("task", POOLS["B"].tasks)
def test_pool_b_starts_in_phase_two_with_the_oracle_handoff(task):
    env = IncidentEnv()
    obs, info = env.reset(task=task, pool="B", seed=1)
    scenario = get_scenario(task)
    assert obs["current_phase"] == 2 and info["phase"] == 2 and info["mode"] == "p2_only"
    first = env.trajectory[0]
    assert first["step"] == 0 and first["phase"] == 1 and first["effect"]["oracle"] is True
    assert first["effect"]["belief"] == asdict(oracle_belief(scenario))
    assert obs["file_tree"] == sorted(load_repo(scenario.repo).tree)
    shown = EpisodeSurface(suite_key(), 1, scenario.name)  # what this episode shows of shas
    assert obs["bad_commit_sha"] in {shown.sha(c.sha) for c in load_repo(scenario.repo).commits}
    if scenario.bad_commit:
        assert obs["bad_commit_sha"] == shown.sha(scenario.bad_commit)


def _seed_module():
    if not SEED_POLICIES.exists():
        pytest.skip(f"seed policies not found at {SEED_POLICIES} (expected ../shared/seed/policies.py)")
    return load_seed_policies()


def test_seed_policies_run_over_every_task_and_pool():
    seed = _seed_module()
    factories = {"null": seed.NullPhase1Policy, "random": lambda: seed.RandomPhase2Policy(seed=0),
                 "oracle_random": lambda: seed.OracleP1ThenRandomP2Policy(seed=0)}
    env = IncidentEnv()
    for pool in POOLS.values():
        for task in pool.tasks:
            for name, make in factories.items():
                policy = make()
                obs, _ = env.reset(task=task, pool=pool.name, seed=3)
                done = False
                while not done:
                    obs, _, terminated, truncated, info = env.step(policy(obs, obs["current_phase"], task))
                    done = terminated or truncated
                final = info["score"]["final"]
                assert 0.0 <= final <= 1.0, (pool.name, task, name, final)


@pytest.mark.parametrize("task", TASKS)
def test_a_saved_trajectory_regrades_to_the_same_score(task):
    env = IncidentEnv()
    policy = ReferencePolicy()
    obs, info = env.reset(task=task, pool=pool_for(task), seed=5)
    call_reset(policy, 5, task)  # hands the reference its answer
    while True:
        obs, _, terminated, truncated, info = env.step(policy(obs, obs["current_phase"], task))
        if terminated or truncated:
            break
    saved = json.loads(json.dumps(env.trajectory))
    assert score_trajectory(task, info["mode"], saved) == info["score"]
    assert play(ReferencePolicy(), task, 5) == info["score"]
