"""Saved episodes are replayed, not trusted: verify_episode and load_run(verify=True)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import srelib
from srelib.env.core import IncidentEnv
from srelib.env.grading.score import score_trajectory
from srelib.policies.scripted.reference import ReferencePolicy, phase2_plan
from srelib.results import Episode, RunStore, count_parse_failures
from srelib.runners.runs import load_run
from srelib.runners.rollout import run_episode
from srelib.adversarial.blunt import NullPolicy
from tests.test_env_fuzz import actions as fuzz_actions


class _Sloppy:
    """Sends a string action, an unparsable one, malformed dicts, then gives up."""

    name = "sloppy"

    def reset(self, seed=None, task_name=None):
        self._n = 0

    def __call__(self, observation, phase, task_name):
        self._n += 1
        script = ["view_alerts", "query_logs:nowhere", {"action_type": 5, "parameters": [1]},
                  {"action_type": "view_alerts", "parameters": []},  # stored as a valid-looking copy
                  {"action_type": "query_logs", "target_service": "orders",
                   "parameters": {"limit": 0}}]
        return script[self._n - 1] if self._n <= len(script) else {"action_type": "__give_up__"}


def _episode(policy, task="memory_leak", pool="C", seed=3, **kwargs) -> Episode:
    episode = run_episode(IncidentEnv(), policy, task=task, pool=pool, seed=seed, **kwargs)
    return Episode.from_json(episode.to_json())  # as stored on disk


@pytest.mark.parametrize("task, pool", [("memory_leak", "A"), ("aliased_fault", "B"),
                                        ("info_ordering", "C"), ("circuit_breaker_noop", "C")])
def test_honest_episodes_replay_to_their_records_and_score(task, pool):
    for policy in (ReferencePolicy(), NullPolicy(), _Sloppy()):
        episode = _episode(policy, task, pool)
        check = srelib.verify_episode(episode)
        assert check.ok and check.records_match and check.score_match, check.problems
        assert check.replayed_score == episode.score
        assert srelib.verify_episode(episode.to_dict()).ok


def test_an_episode_cut_short_by_the_runner_still_replays():
    episode = _episode(ReferencePolicy(), max_steps=3)
    assert episode.ended_by == "max_steps" and srelib.verify_episode(episode).ok


def test_a_record_appended_to_a_null_episode_is_caught():
    """The forged trajectory: a null episode plus the reference's patch, re-scored."""
    episode = _episode(NullPolicy(), "memory_leak", "C", seed=0)
    assert episode.final == 0.0
    patch = phase2_plan("memory_leak")[-1]
    forged = copy.deepcopy(episode)
    forged.steps.append({**forged.steps[-1], "step": forged.steps[-1]["step"] + 1, "action": patch,
                         "effect": {"diff": patch["parameters"]["diff"]}})
    forged.score = score_trajectory("memory_leak", "joint", forged.steps)
    assert forged.final > episode.final  # re-grading alone trusts the forgery
    check = srelib.verify_episode(forged)
    assert not check.ok and not check.records_match
    assert "comes after the episode ended" in check.problems[0]
    assert check.replayed_score["final"] == 0.0


def test_edited_records_scores_and_endings_are_caught():
    honest = _episode(ReferencePolicy(), "cascading_failure", "C", seed=2)
    rescored = copy.deepcopy(honest)
    rescored.score["final"] = 1.0 if honest.final != 1.0 else 0.5
    check = srelib.verify_episode(rescored)
    assert not check.ok and check.records_match and not check.score_match

    edited = copy.deepcopy(honest)
    edited.steps[1]["reward"] = 0.5
    check = srelib.verify_episode(edited)
    assert not check.records_match and "record 1" in check.problems[0] and "reward" in check.problems[0]

    swapped = copy.deepcopy(honest)
    declare = next(r for r in swapped.steps if r["action"]["action_type"] == "declare_root_cause")
    declare["action"]["parameters"]["service"] = "database"
    assert not srelib.verify_episode(swapped).records_match

    hidden = copy.deepcopy(honest)  # a remediation passed off as an invalid action
    remedy = next(r for r in hidden.steps if r["action"]["action_type"] == "rollback_deploy")
    remedy.update(valid=False, error="made up")
    hidden.score = score_trajectory("cascading_failure", "joint", hidden.steps)
    check = srelib.verify_episode(hidden)
    assert not check.records_match and "valid" in check.problems[0]  # it replays as valid

    cut = copy.deepcopy(honest)
    cut.steps.pop()
    check = srelib.verify_episode(cut)
    assert not check.ok and any("replay did not end" in p for p in check.problems)


def test_an_episode_of_an_unknown_task_cannot_be_replayed():
    episode = _episode(NullPolicy())
    episode.task = "no_such_task"
    check = srelib.verify_episode(episode)
    assert not check.ok and check.replayed_score is None and "cannot replay" in check.problems[0]
    with pytest.raises(ValueError, match="Episode or its dict"):
        srelib.verify_episode([1, 2])


def test_load_run_with_verify_replays_every_episode(tmp_path):
    store = RunStore(tmp_path / "run")
    honest = [_episode(ReferencePolicy(), seed=seed) for seed in (0, 1)]
    nulls = [_episode(NullPolicy(), seed=seed) for seed in (0, 1)]
    store.write_config({}, plan=[e.key for e in (*honest, *nulls)])
    for episode in (*honest, nulls[0]):
        store.append(episode)
    with pytest.raises(ValueError, match="'null', 'memory_leak', 'C', 'joint', 1\\): planned but"):
        load_run(tmp_path / "run", verify=True)

    forged = nulls[1]
    forged.score = {**forged.score, "final": 0.9}
    store.append(forged)
    with pytest.raises(ValueError, match=r"1 problem\(s\) with the 4 episodes .* do not replay"
                       ) as caught:
        load_run(tmp_path / "run", verify=True)
    assert "'null', 'memory_leak', 'C', 'joint', 1): stored score 0.9" in str(caught.value)
    assert len(load_run(tmp_path / "run")) == 4  # without verify: loaded as written
    assert json.loads((tmp_path / "run" / "episodes.jsonl").read_text().splitlines()[-1])["seed"] == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cell=st.sampled_from([(t, p) for p in srelib.POOLS for t in srelib.POOLS[p].tasks]),
       seed=st.integers(0, 2**32), batch=st.lists(fuzz_actions, min_size=5, max_size=30))
def test_any_episode_of_random_and_malformed_actions_replays(cell, seed, batch):
    task, pool = cell
    env = IncidentEnv()
    obs, info = env.reset(task=task, pool=pool, seed=seed)
    for action in batch:
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    episode = Episode(policy="fuzz", task=task, pool=pool, mode=info["mode"], seed=seed,
                      steps=env.trajectory, terminated=obs["done"] and terminated,
                      truncated=obs["done"] and truncated, ended_by=info.get("ended_by"),
                      parse_failures=count_parse_failures(env.trajectory),
                      score=info.get("score") or score_trajectory(task, info["mode"], env.trajectory))
    check = srelib.verify_episode(Episode.from_json(episode.to_json()))
    assert check.ok, check.problems
