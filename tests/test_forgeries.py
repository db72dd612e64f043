"""Forged runs: seven ways to edit a saved run, each caught by ``load_run(verify=True)``.

One honest run is written by ``srelib.evaluate`` (its manifest plans the grid); each test
copies it, makes one edit a cheater would make to look better, and requires verification to
fail naming the edited episode (or the one the edit removed).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil

import pytest

import srelib
from srelib.env.actions import PARSE_ERROR, ActionType
from srelib.env.belief import BeliefState
from srelib.env.grading import score_trajectory
from srelib.policies.base import handoff_action, make_action
from srelib.policies.scripted.baselines import RandomPhase2Policy
from srelib.policies.scripted.reference import ReferencePolicy
from srelib.results import EPISODES_FILE, RUN_FILE, UNVERIFIABLE, Episode, count_parse_failures
from srelib.runners.rollout import evaluate

TRAIN, HELDOUT = "memory_leak", "heldout_aliased_severity"


class GarbledPolicy:
    """Replies once with text no parser reads, then hands over empty and proposes no patch."""

    name = "garbled"

    def __call__(self, observation, phase, task_name):
        if observation["steps_taken"] == 0:
            return "I think we should look at the logs first"
        if phase == 1:
            return handoff_action(BeliefState())
        return make_action(ActionType.PROPOSE_PATCH, diff="")


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """An honest run: the reference, a garbled and a random policy, a train and a held-out
    task, two seeds, ``r_cross`` against a null repair of 0.2; and a run cut by a step cap."""
    root = tmp_path_factory.mktemp("honest")
    evaluate({"reference": ReferencePolicy, "garbled": GarbledPolicy,
              "random": RandomPhase2Policy}, tasks=[TRAIN, HELDOUT],
             pools=["C", "D"], seeds=2, out=root / "run", progress=False,
             null_repair={TRAIN: 0.2, HELDOUT: 0.2})
    evaluate({"reference": ReferencePolicy}, tasks=[TRAIN], pools=["C"], seeds=1, max_steps=3,
             out=root / "capped", progress=False)
    for run in ("run", "capped"):
        srelib.load_run(root / run, verify=True)  # the honest runs verify
    return root


def _forge(honest, tmp_path, edit, run="run"):
    """A copy of the honest ``run`` with ``edit(episodes)`` applied to its list of episode dicts."""
    forged = tmp_path / run
    shutil.copytree(honest / run, forged)
    path = forged / EPISODES_FILE
    episodes = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    edit(episodes)
    path.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    return forged


def _one(episodes, policy="reference", task=TRAIN, pool="C", seed=1) -> dict:
    wanted = srelib.task_id(task)
    return next(e for e in episodes
                if (e["policy"], e["task"], e["pool"], e["seed"]) == (policy, wanted, pool, seed))


def _rescored(episode: dict) -> dict:
    """What a careful forger does after editing the records: score them again."""
    episode["score"] = score_trajectory(episode["task"], episode["mode"], episode["steps"])
    return episode


def _rejected(path, *names: str) -> str:
    with pytest.raises(ValueError, match="do not replay") as caught:
        srelib.load_run(path, verify=True)
    message = str(caught.value)
    for name in names:
        assert name in message, message
    return message


def test_the_manifest_plans_the_grid_and_lists_what_no_replay_checks(honest):
    record = json.loads((honest / "run" / RUN_FILE).read_text())
    planned = record["plan"]["episodes"]
    assert len(planned) == 3 * 2 * 2 and len(record["plan"]["digest"]) == 64
    assert all(srelib.task_id(t) == t for _, t, *_ in planned)  # opaque ids only
    assert record["unverifiable"] == list(UNVERIFIABLE)
    stored = {f.name for f in dataclasses.fields(Episode)}
    assert set(UNVERIFIABLE) < stored  # every other field is checked by the replay or the plan


def test_a_relabelled_seed_fails(honest, tmp_path):
    def relabel(episodes):
        _one(episodes, "garbled", seed=1)["seed"] = 7

    _rejected(_forge(honest, tmp_path, relabel), "('garbled', 'memory_leak', 'C', 'joint', 7): "
              "not in the plan", "('garbled', 'memory_leak', 'C', 'joint', 1): planned but missing")

    def swap(episodes):  # seeds swapped inside the plan: the records no longer replay
        a, b = (_one(episodes, "random", seed=s) for s in (0, 1))
        assert a["steps"] != b["steps"]  # (two identical episodes would both be genuine)
        a["seed"], b["seed"] = b["seed"], a["seed"]

    _rejected(_forge(honest, tmp_path / "swap", swap), "('random', 'memory_leak', 'C', 'joint', 0)",
              "('random', 'memory_leak', 'C', 'joint', 1)")


def test_a_pool_d_episode_recorded_as_phase_2_only_fails(honest, tmp_path):
    def easier(episodes):
        episode = _one(episodes, "reference", HELDOUT, "D", 0)
        episode["mode"] = "p2_only"  # the oracle handoff, on a held-out task
        episode["steps"] = episode["steps"][-2:]
        _rescored(episode)

    _rejected(_forge(honest, tmp_path, easier),
              "('reference', 'heldout_aliased_severity', 'D', 'p2_only', 0)")


def test_cherry_picked_seeds_fail(honest, tmp_path):
    def drop_worst(episodes):
        garbled = [e for e in episodes if e["policy"] == "garbled"]
        worst = min(garbled, key=lambda e: e["score"]["final"])
        episodes.remove(worst)

    message = _rejected(_forge(honest, tmp_path, drop_worst), "planned but missing")
    assert "garbled" in message


def test_a_dropped_last_record_fails(honest, tmp_path):
    def drop(episodes):  # the last record was a failed patch: drop it and score the rest
        episode = _one(episodes, "garbled", seed=0)
        episode["steps"].pop()
        _rescored(episode)

    _rejected(_forge(honest, tmp_path, drop), "('garbled', 'memory_leak', 'C', 'joint', 0): "
              "the episode says it ended as ('propose_patch', True, False); the replay did not end")

    def blame_the_cap(episodes):  # and say the step cap cut it
        episode = _one(episodes, "garbled", seed=0)
        episode["steps"].pop()
        episode.update(ended_by="max_steps", terminated=False, truncated=True)
        _rescored(episode)

    _rejected(_forge(honest, tmp_path / "cap", blame_the_cap), "the run had no step cap")

    def under_the_cap(episodes):  # a capped run: one action fewer than the cap
        episodes[0]["steps"].pop()
        _rescored(episodes[0])

    _rejected(_forge(honest, tmp_path, under_the_cap, run="capped"), "step cap (3) ended it after 2")


def test_a_flipped_ended_by_fails(honest, tmp_path):
    def flip(episodes):
        _one(episodes, "reference", seed=0)["ended_by"] = "give_up"

    _rejected(_forge(honest, tmp_path, flip), "('reference', 'memory_leak', 'C', 'joint', 0): "
              "the episode says it ended as ('give_up'")

    def crash(episodes):  # a capped episode passed off as a policy crash
        episodes[0]["ended_by"] = "policy_error"

    _rejected(_forge(honest, tmp_path, crash, run="capped"), "no traceback to show for it")


def test_a_parse_error_rewritten_as_an_action_fails(honest, tmp_path):
    def rewrite(action):
        def edit(episodes):
            episode = _one(episodes, "garbled", seed=1)
            record = next(r for r in episode["steps"] if r["action"]["action_type"] == PARSE_ERROR)
            record["action"] = action
            episode["parse_failures"] = count_parse_failures(episode["steps"])
        return edit

    original = _one([json.loads(line) for line in
                     (honest / "run" / EPISODES_FILE).read_text().splitlines()], "garbled", seed=1)
    assert original["parse_failures"] == 1
    for n, action in enumerate([make_action(ActionType.VIEW_ALERTS),  # would replay as valid
                                make_action("look_at_logs")]):  # invalid, with the parse error kept
        _rejected(_forge(honest, tmp_path / str(n), rewrite(action)),
                  "('garbled', 'memory_leak', 'C', 'joint', 1): record 0 (step 1) differs")

    def undercount(episodes):
        _one(episodes, "garbled", seed=1)["parse_failures"] = 0

    _rejected(_forge(honest, tmp_path / "count", undercount), "says 0 parse failures")


def test_an_edited_cross_term_fails(honest, tmp_path):
    def lift(episodes):
        episode = _one(episodes, "reference", seed=0)
        assert episode["r_cross"] == pytest.approx(0.8)  # repair 1.0 over the null repair 0.2
        episode["r_cross"] = 1.0

    _rejected(_forge(honest, tmp_path, lift), "says r_cross=1.0; the run's null_repair gives 0.8")


def test_a_run_without_a_plan_or_with_an_edited_plan_is_not_verified(honest, tmp_path):
    forged = _forge(honest, tmp_path, lambda episodes: None)
    record = json.loads((forged / RUN_FILE).read_text())
    record["plan"]["episodes"].pop()
    (forged / RUN_FILE).write_text(json.dumps(record))
    _rejected(forged, "does not match its digest", "not in the plan")
    del record["plan"]
    (forged / RUN_FILE).write_text(json.dumps(record))
    _rejected(forged, "no planned grid")


def test_an_honest_episode_still_replays_alone(honest):
    line = (honest / "run" / EPISODES_FILE).read_text().splitlines()[0]
    episode = Episode.from_json(line)
    assert srelib.verify_episode(copy.deepcopy(episode), null_repair={TRAIN: 0.2, HELDOUT: 0.2}).ok
