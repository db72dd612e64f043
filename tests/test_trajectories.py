"""Episodes as training rows: one per agent turn, replayed, round-tripped through datasets."""

import json

import pytest

import srelib
from srelib.training import trajectories
from srelib.env.parse import parse_action
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


def test_a_tool_turn_dataset_keeps_each_calls_own_arguments(episodes, tmp_path_factory):
    """Arrow merges a struct's fields across rows, which would give every tool call the other
    calls' arguments as nulls; the dataset keeps each call's arguments as JSON text instead, so
    its chats render exactly as the rows do."""
    pytest.importorskip("datasets")
    from transformers import AutoTokenizer

    from srelib.training.tiny_model import tiny_chat_model
    from srelib.training.chat_format import use_tool_format

    rows = list(trajectories.turn_rows(episodes, tool_turns=True))
    dataset = trajectories.to_dataset(episodes, tool_turns=True)
    tokenizer = use_tool_format(AutoTokenizer.from_pretrained(
        tiny_chat_model(tmp_path_factory.getbasetemp() / "tiny_chat_model")))

    def render(row):
        return tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False)

    calls = 0
    for row, stored in zip(rows, dataset, strict=True):
        assert render(stored) == render(row)
        for mine, theirs in zip(row["completion"], stored["completion"], strict=True):
            for a, b in zip(mine["tool_calls"], theirs["tool_calls"], strict=True):
                assert json.loads(b["function"]["arguments"]) == a["function"]["arguments"]
                calls += 1
    assert calls == len(rows)


def test_a_forged_episode_does_not_replay(episodes):
    forged = srelib.Episode.from_dict(episodes[0].to_dict())
    forged.steps[1]["reward"] = 0.99
    with pytest.raises(ValueError, match="does not replay"):
        list(trajectories.turn_rows([forged]))
