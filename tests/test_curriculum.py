"""The curriculum driver: gated stages, its own seeded draws, a learner hook, resume."""

import pytest

from srelib.analysis.curriculum import Curriculum, VarianceGate
from srelib.policies import NullPhase1Policy, ReferencePolicy

GATE = VarianceGate(window=3, max_std=0.05, min_samples=2)


def test_a_settled_policy_advances_a_to_d_and_reproduces_from_its_seed():
    events = []
    run = Curriculum(ReferencePolicy, seed=5, gate=GATE, heldout_episodes=4,
                     learner=events.append).run()
    assert [s["stage"] for s in run.stages] == ["A", "B", "C", "D"]
    assert all(s["opened"] for s in run.stages[:3])
    assert set(run.heldout["pool"]) == {"D"} and len(run.heldout) == 4
    assert [e.kind for e in events].count("episode") == len(run.episodes)
    assert [e.stage for e in events if e.kind == "stage"] == ["A", "B", "C", "D"]
    again = Curriculum(ReferencePolicy, seed=5, gate=GATE, heldout_episodes=4).run()
    assert again.draws == run.draws
    other = Curriculum(ReferencePolicy, seed=6, gate=GATE, heldout_episodes=4).run()
    assert other.draws != run.draws


def test_a_stage_that_never_settles_stops_training_but_still_evaluates():
    class Erratic(ReferencePolicy):
        """The reference on even episodes, an empty handoff on odd ones: never settles."""
        calls = 0

        def reset(self, seed=None, task_name=None):
            type(self).calls += 1
            super().reset(seed=seed, task_name=task_name)
            self._null = NullPhase1Policy() if type(self).calls % 2 else None

        def __call__(self, observation, phase, task_name):
            if self._null is not None:
                return self._null(observation, phase, task_name)
            return super().__call__(observation, phase, task_name)

    run = Curriculum(Erratic, seed=1, gate=GATE, max_episodes=12, heldout_episodes=2).run()
    assert [(s["stage"], s["episodes"], s["opened"]) for s in run.stages] == [
        ("A", 12, False), ("D", 2, None)]


def test_a_rerun_resumes_from_its_run_directory(tmp_path):
    first = Curriculum(ReferencePolicy, seed=2, gate=GATE, heldout_episodes=2, out=tmp_path).run()
    events = []
    second = Curriculum(ReferencePolicy, seed=2, gate=GATE, heldout_episodes=2, out=tmp_path,
                        learner=events.append).run()
    replayed = [e.replayed for e in events if e.kind == "episode"]
    assert replayed and all(replayed)
    assert second.draws == first.draws
    assert second.frame.drop(columns="wall_s").equals(first.frame.drop(columns="wall_s"))


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="unknown stages"):
        Curriculum(ReferencePolicy, stages=["A", "Z"])
    with pytest.raises(ValueError, match="VarianceGate needs"):
        VarianceGate(window=1)


def test_a_forged_stored_episode_is_run_again_not_trusted(tmp_path):
    import json

    first = Curriculum(ReferencePolicy, seed=2, gate=GATE, heldout_episodes=2, out=tmp_path).run()
    path = tmp_path / "episodes.jsonl"
    lines = path.read_text().splitlines()
    forged = json.loads(lines[0])
    forged["score"]["final"] = 0.0  # a stored score that the replay does not give
    path.write_text("\n".join([json.dumps(forged), *lines[1:]]) + "\n")
    events = []
    with pytest.warns(UserWarning, match="1 stored episode"):
        second = Curriculum(ReferencePolicy, seed=2, gate=GATE, heldout_episodes=2,
                            out=tmp_path, learner=events.append).run()
    replayed = [e.replayed for e in events if e.kind == "episode"]
    assert replayed[0] is False and all(replayed[1:])
    assert second.draws == first.draws and second.episodes[0].final == first.episodes[0].final
