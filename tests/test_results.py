"""Episode records and the run directory store: round trips, appends, resume, killed runs."""

import json
import warnings

import pytest

from srelib.env.actions import PARSE_ERROR
from srelib.results import (COLUMNS, EPISODES_FILE, CorruptLinesWarning, Episode, RunStore,
                            count_parse_failures, load_config, load_episodes)
from srelib.runners.runs import load_run


def _episode(seed=0, policy="heuristic", final=0.5):
    steps = [
        {"step": 1, "phase": 1, "minute": 4, "valid": True, "error": None, "reward": 0.01,
         "statuses": {}, "effect": None,
         "action": {"action_type": "view_alerts", "target_service": None, "parameters": {}}},
        {"step": 2, "phase": 1, "minute": 4, "valid": False, "error": "unparsable", "reward": -0.02,
         "statuses": {}, "effect": None,
         "action": {"action_type": PARSE_ERROR, "target_service": None,
                    "parameters": {"reason": "no JSON"}}},
        {"step": 3, "phase": 1, "minute": 5, "valid": True, "error": None, "reward": 0.05,
         "statuses": {}, "action": {"action_type": "transition_to_phase2", "target_service": None,
                                    "parameters": {}},
         "effect": {"belief": {"suspected_service": "orders"}, "bad_commit_sha": "a3f7c91"}},
        {"step": 4, "phase": 2, "minute": 6, "valid": True, "error": None, "reward": 0.0,
         "statuses": {}, "effect": {"diff": ""},
         "action": {"action_type": "propose_patch", "target_service": None,
                    "parameters": {"diff": ""}}},
    ]
    score = {"final": final, "diagnosis": 0.6, "mitigation": None, "repair": 0.4,
             "efficiency": 0.5, "counted": ["diagnosis", "repair", "efficiency"],
             "steps": {"p1": 3, "p2": 1}}
    return Episode(policy=policy, task="memory_leak", pool="C", mode="joint", seed=seed,
                   steps=steps, score=score, r_cross=0.1,
                   parse_failures=count_parse_failures(steps), terminated=True, wall_s=0.01)


def test_episode_round_trips_through_dict_and_json():
    episode = _episode()
    assert Episode.from_dict(episode.to_dict()) == episode
    assert Episode.from_json(episode.to_json()) == episode
    assert json.loads(episode.to_json())["steps"][2]["effect"]["bad_commit_sha"] == "a3f7c91"


def test_episode_derived_fields():
    episode = _episode()
    assert episode.parse_failures == 1
    assert episode.handoff == {"suspected_service": "orders"}
    assert episode.phase_steps == (3, 1)
    row = episode.row()
    assert tuple(row) == COLUMNS
    assert (row["final"], row["repair"], row["mitigation"], row["p2_steps"]) == (0.5, 0.4, None, 1)


def test_from_dict_rejects_unknown_fields_naming_valid_ones():
    data = {**_episode().to_dict(), "bogus": 1}
    with pytest.raises(ValueError, match="bogus.*valid"):
        Episode.from_dict(data)


def test_store_appends_skips_duplicates_and_loads_sorted(tmp_path):
    store = RunStore(tmp_path)
    store.write_config({"seeds": [0, 1, 2]})
    for seed in (2, 0, 1):
        assert store.append(_episode(seed))
    assert not store.append(_episode(1, final=0.9))
    frame = load_run(tmp_path)
    assert list(frame["seed"]) == [0, 1, 2]
    assert list(frame.columns) == list(COLUMNS)
    assert (frame["final"] == 0.5).all()
    config = load_config(tmp_path)
    assert config["config"] == {"seeds": [0, 1, 2]}
    assert config["versions"]["srelib"] and config["versions"]["python"]
    assert "git" in config


def test_store_resume_keeps_done_and_restart_clears(tmp_path):
    store = RunStore(tmp_path)
    store.append(_episode(0))
    store.append(_episode(1))
    resumed = RunStore(tmp_path)
    assert resumed.done == {_episode(0).key, _episode(1).key}
    assert not resumed.append(_episode(0))
    fresh = RunStore(tmp_path, resume=False)
    assert fresh.done == set() and load_run(tmp_path).empty


def test_killed_run_truncated_line_is_ignored_then_repaired(tmp_path):
    store = RunStore(tmp_path)
    store.append(_episode(0))
    with (tmp_path / EPISODES_FILE).open("a") as fh:
        fh.write(_episode(1).to_json()[:50])  # a write cut short by a kill
    with pytest.warns(CorruptLinesWarning, match="skipped 1 corrupt line"):
        assert list(load_run(tmp_path)["seed"]) == [0]
    resumed = RunStore(tmp_path)
    assert resumed.append(_episode(1))
    assert [e.seed for e in load_episodes(tmp_path)] == [0, 1]
    lines = (tmp_path / EPISODES_FILE).read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line) for line in lines)


CORRUPT = [b"not json", _episode(7).to_json()[:80].encode(), b"\xff\xfe broken utf-8",
           b"[" * 100_000 + b"]" * 100_000, b'{"policy": "x"}', b"null", b'"a string"']


def test_corrupt_lines_anywhere_are_skipped_with_a_count_then_rewritten(tmp_path):
    good = [_episode(seed).to_json().encode() for seed in range(3)]
    lines = [CORRUPT[0], good[0], *CORRUPT[1:4], good[1], good[1], *CORRUPT[4:], good[2], b"half"]
    (tmp_path / EPISODES_FILE).write_bytes(b"\n".join(lines))
    with pytest.warns(CorruptLinesWarning, match="skipped 8 corrupt line\\(s\\) \\(line 1, 3, 4, 5, 8"):
        assert list(load_run(tmp_path)["seed"]) == [0, 1, 2]
    store = RunStore(tmp_path)  # resuming rewrites the file: good lines only, once each
    assert store.done == {_episode(s).key for s in range(3)}
    assert (tmp_path / EPISODES_FILE).read_bytes() == b"".join(line + b"\n" for line in good)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.append(_episode(7)) and len(load_episodes(tmp_path)) == 4


def test_load_run_on_a_plain_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="not a run directory"):
        load_run(tmp_path)


def test_episode_repr_is_a_one_line_summary():
    episode = _episode(seed=4, final=0.5)
    text = repr(episode)
    assert text == ("Episode(task=memory_leak, pool=C, seed=4, policy=heuristic, final=0.500, "
                    "steps=4)")
    assert repr(Episode(policy="p", task="t", pool=None, mode="joint", seed=1)) == \
        "Episode(task=t, pool=None, seed=1, policy=p, final=-, steps=0)"


def test_load_run_accepts_the_episodes_file_itself(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append(_episode(seed=1))
    store.append(_episode(seed=2))
    by_file = load_run(tmp_path / "run" / EPISODES_FILE)
    assert by_file.equals(load_run(tmp_path / "run")) and list(by_file["seed"]) == [1, 2]


def test_a_lone_surrogate_in_a_stored_episode_loads_as_printable_text(tmp_path):
    """JSON escapes a lone surrogate (a policy's own text, a hand-edited file); loaded as is,
    the run could not be printed or written as UTF-8 (srelib report failed on it)."""
    episode = _episode(policy="evil\ud800")
    episode.steps[0]["action"]["parameters"] = {"note": "x\udcff", "\ud800key": 1}
    store = RunStore(tmp_path)
    store.append(episode)
    store.append(_episode(seed=1, policy="plain \U0001F600"))  # a valid pair stays as it is
    loaded = sorted(load_episodes(tmp_path), key=lambda e: e.seed)
    assert [e.policy for e in loaded] == ["evil?", "plain \U0001F600"]
    assert loaded[0].steps[0]["action"]["parameters"] == {"note": "x?", "?key": 1}
    json.dumps([e.to_dict() for e in loaded], ensure_ascii=False).encode("utf-8")
    load_run(tmp_path).to_csv(tmp_path / "frame.csv", encoding="utf-8")


def _grid(policies, cells, seeds):
    from srelib.env.tasks.ids import task_id

    return [(p, task_id(t), pool, mode, s) for p in policies for t, pool, mode in cells
            for s in seeds]


def test_the_grid_of_an_evaluate_call_has_no_findings_and_its_holes_are_named():
    from srelib.results.grid import grid_findings
    from srelib.runners.rollout import plan

    jobs = plan(["a", "b"], tasks=["memory_leak", "heldout_aliased_severity"], pools="B,C,D",
                seeds=3)
    keys = [j.key for j in jobs]
    assert grid_findings(keys) == ([], [])
    problems, claims = grid_findings(keys[1:] + keys[:1] * 2)
    assert problems == [f"{repr(('a', 'memory_leak', 'B', 'p2_only', 0))}: planned 2 times"]
    problems, _ = grid_findings(keys[1:])  # a hole: the first key, named by its public name
    assert problems == [f"{repr(('a', 'memory_leak', 'B', 'p2_only', 0))}: the plan's grid "
                        "(2 policies x 2 tasks x 3 pools x seeds 0..2) holds it but the plan "
                        "does not: no evaluate call plans this run"]


def test_a_task_planned_in_a_pool_that_does_not_hold_it_and_chosen_seeds_are_found():
    from srelib.results.grid import grid_findings

    keys = _grid(["a"], [("memory_leak", "C", "joint"), ("heldout_aliased_severity", "C",
                                                          "joint")], [0])
    problems, _ = grid_findings(keys)
    assert problems == ["('a', 'heldout_aliased_severity', 'C', 'joint', 0): planned in pool C, "
                        "whose split does not hold its task"]
    problems, claims = grid_findings(_grid(["a"], [("memory_leak", "C", "joint")], [3, 7]))
    assert problems == [] and claims == ["the seeds [3, 7] are not 0..1: that they were fixed "
                                         "before any episode ran is the run's claim"]
    assert grid_findings([])[0] == ["the plan holds no episodes"]
    assert grid_findings([("a", "x")])[0][0].startswith("the plan holds keys that are not")


def test_settings_other_than_srelibs_are_named():
    from srelib.results.settings import nonstandard_settings, standard_weights, version_claims

    assert nonstandard_settings({}) == []
    assert nonstandard_settings({"config": {"max_steps": None, "null_repair": None},
                                 "weights": standard_weights()}) == []
    found = nonstandard_settings({"config": {"max_steps": 5, "null_repair": {"t": 0.1}},
                                  "weights": {**standard_weights(), "repair": 1.0}})
    assert [f.split("=")[0] for f in found] == ["max_steps", "null_repair", "weights"]
    assert version_claims({"versions": {"srelib": "0.0.1"}})[0].startswith(
        "the run says srelib '0.0.1' made it")


def test_the_manifest_names_the_weights_and_the_registered_policies(tmp_path):
    import functools

    from srelib.policies.registry import scripted_policy
    from srelib.policies.scripted.reference import ReferencePolicy
    from srelib.results.settings import standard_weights
    from srelib.runners.rerun import scripted_name

    assert scripted_name(scripted_policy("heuristic-revert")) == "heuristic-revert"
    assert scripted_name(ReferencePolicy) == "reference"
    assert scripted_name(ReferencePolicy()) is None  # an instance may hold other settings
    assert scripted_name(functools.partial(ReferencePolicy)) is None
    assert scripted_name(type("ReferencePolicy", (), {})) is None  # not srelib's class
    store = RunStore(tmp_path)
    store.write_config({})
    assert load_config(tmp_path)["weights"] == standard_weights()
