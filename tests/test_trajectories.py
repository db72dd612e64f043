"""Episodes as training rows: one per agent turn, replayed, round-tripped through datasets."""

import json

import pytest

import srelib
from srelib import trajectories
from srelib.parse import parse_action
from srelib.policies import CompositePolicy, HeuristicPhase1Policy, ReferencePolicy, RevertPhase2Policy


@pytest.fixture(scope="module")
def episodes(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    srelib.evaluate({"reference": ReferencePolicy,
                     "heuristic": lambda: CompositePolicy(HeuristicPhase1Policy(), RevertPhase2Policy())},
                    tasks=["memory_leak", "circuit_breaker_noop"], pools=["B", "C"], seeds=2,
                    out=out, progress=False)
    return srelib.results.load_episodes(out)


def test_one_row_per_agent_turn_with_what_the_policy_saw(episodes):
    rows = list(trajectories.turn_rows(episodes))
    turns = sum(1 for e in episodes for r in e.steps if r["step"] > 0)
    assert len(rows) == turns
    first = rows[0]
    assert set(first) == set(trajectories.ROW_FIELDS)
    assert first["prompt"][0]["role"] == "system" and first["prompt"][-1]["role"] == "user"
    assert first["step"] == 1 and first["score"] == episodes[0].final
    for row in rows:
        action = json.loads(row["action"])
        assert row["completion"] == [{"role": "assistant", "content": row["action"]}]
        parsed = parse_action(row["action"])
        assert parsed.action["action_type"] == action["action_type"]


def test_dataset_and_jsonl_round_trip(episodes, tmp_path):
    rows = list(trajectories.turn_rows(episodes))
    dataset = trajectories.to_dataset(episodes)
    assert dataset.num_rows == len(rows) and dataset.to_list() == rows
    path = tmp_path / "turns.jsonl"
    assert trajectories.write_jsonl(episodes, path) == len(rows)
    assert trajectories.read_jsonl(path) == json.loads(json.dumps(rows))


def test_a_forged_episode_does_not_replay(episodes):
    forged = srelib.Episode.from_dict(episodes[0].to_dict())
    forged.steps[1]["reward"] = 0.99
    with pytest.raises(ValueError, match="does not replay"):
        list(trajectories.turn_rows([forged]))
