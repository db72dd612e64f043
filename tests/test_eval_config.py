"""EvalConfig: evaluate's grid as one dataclass, the same frame as its keywords, written to
run.json and read back, and runs saved before it still load and verify."""

import dataclasses
import json

import pytest

import srelib
from srelib import EvalConfig
from srelib.results.store import load_config

GRID = dict(tasks=["memory_leak", "cascading_failure"], pools=["A", "C"], seeds=[0, 2],
            max_steps=6, null_repair={"memory_leak": 0.25}, batch_size=2)
#: columns that measure time, not what happened
TIMING = ["wall_s", "latency_s"]


def _policies():
    return {"heuristic": srelib.scripted_policy("heuristic"), "null": srelib.scripted_policy("null")}


def test_evaluate_takes_a_config_with_the_same_frame_as_keywords():
    by_keywords = srelib.evaluate(_policies(), progress=False, **GRID)
    by_config = srelib.evaluate(_policies(), config=EvalConfig(**GRID), progress=False)
    assert len(by_keywords) == 16 and by_keywords["r_cross"].notna().any()
    assert by_config.drop(columns=TIMING).equals(by_keywords.drop(columns=TIMING))
    assert by_config.attrs["nonstandard"] == by_keywords.attrs["nonstandard"] != []


def test_a_config_and_grid_keywords_together_are_refused():
    with pytest.raises(TypeError, match="config= and also seeds"):
        srelib.evaluate(_policies(), config=EvalConfig(seeds=1), seeds=3, progress=False)
    with pytest.raises(TypeError, match="must be an EvalConfig"):
        srelib.evaluate(_policies(), config={"seeds": 1}, progress=False)
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        EvalConfig(workers=0)


def test_the_config_normalises_what_evaluate_accepts():
    config = EvalConfig(tasks=("memory_leak",), pools="A, C", seeds=range(2))
    assert (config.tasks, config.pools, config.seeds) == (["memory_leak"], ["A", "C"], [0, 1])
    assert EvalConfig(pools=None).pools == [None]


def test_run_json_round_trips_the_config(tmp_path):
    config = EvalConfig(**GRID)
    srelib.evaluate(_policies(), config=config, out=tmp_path, progress=False)
    manifest = load_config(tmp_path)
    assert EvalConfig.from_run(manifest) == config
    assert EvalConfig.from_run(manifest["config"]) == config
    assert {"policies", "registered"} <= set(manifest["config"])
    frame = srelib.load_run(tmp_path, verify=True)
    assert frame.attrs["verified"] and len(frame) == 16


def test_a_run_saved_before_the_config_still_loads_and_verifies(tmp_path):
    """run.json as evaluate wrote it before EvalConfig: no batch_size key."""
    grid = {**GRID, "batch_size": 32}
    srelib.evaluate(_policies(), out=tmp_path, progress=False, **grid)
    run_file = tmp_path / "run.json"
    manifest = json.loads(run_file.read_text())
    del manifest["config"]["batch_size"]
    run_file.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    assert EvalConfig.from_run(load_config(tmp_path)) == EvalConfig(**grid)
    assert srelib.load_run(tmp_path, verify=True).attrs["verified"]


def test_a_bad_config_in_run_json_is_named():
    with pytest.raises(ValueError, match="must be a JSON object"):
        EvalConfig.from_run({"config": ["seeds", 3]})
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        EvalConfig.from_run({"config": {"workers": "4"}})


def test_every_field_is_an_evaluate_keyword():
    import inspect

    parameters = inspect.signature(srelib.evaluate).parameters
    for field in dataclasses.fields(EvalConfig):  # with evaluate's default, the config's
        assert EvalConfig(**{field.name: parameters[field.name].default}) == EvalConfig()
