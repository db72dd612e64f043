"""The validity gate through the real environment, pool B's handoff, seed compatibility and
re-grading saved trajectories."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from srelib.env.core import IncidentEnv
from srelib.env.grading import score_trajectory
from srelib.env.pools import POOLS, oracle_belief
from srelib.env.repos import load_repo
from srelib.env.scenarios import TASKS, get_scenario
from srelib.policies.reference import ReferencePolicy
from srelib.testing import SEED_POLICIES, load_seed_policies
from srelib.validity import (GATE, format_validity_summary, format_validity_table, play, pool_for,
                             validity_table)

def test_validity_gate_holds_on_every_task(capsys):
    rows = validity_table()
    with capsys.disabled():
        print("\n" + format_validity_table(rows))
        print("\n" + format_validity_summary(rows))
    assert len(rows) == len(GATE) * len(TASKS) + 1
    failed = [r for r in rows if not r["ok"]]
    assert not failed, failed
    reference = [r["score"] for r in rows if r["policy"] == ReferencePolicy.name]
    assert min(reference) >= 0.95
    summary = format_validity_summary(rows).splitlines()[2:]
    assert len(summary) == len(GATE) and all(line.endswith("| yes |") for line in summary)


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
    assert obs["bad_commit_sha"] in {c.sha for c in load_repo(scenario.repo).commits}
    if scenario.bad_commit:
        assert obs["bad_commit_sha"] == scenario.bad_commit


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
    policy.reset(seed=5, task_name=task)
    while True:
        obs, _, terminated, truncated, info = env.step(policy(obs, obs["current_phase"], task))
        if terminated or truncated:
            break
    saved = json.loads(json.dumps(env.trajectory))
    assert score_trajectory(task, info["mode"], saved) == info["score"]
    assert play(ReferencePolicy(), task, 5) == info["score"]
