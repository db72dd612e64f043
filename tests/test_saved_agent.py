"""A saved agent's folder is input, not code: its settings and model JSON are checked against
a schema with bounds before use, and loading it runs nothing from the folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srelib.policies.llm.saved import (MAX_JSON_BYTES, SETTINGS_FILE, check_settings, save_settings,
                                   saved_settings)

GOOD = {"system_prompt": "Reply with one JSON action.", "obs_chars": 1200, "max_history": 40,
        "max_prompt_chars": 24000, "max_new_tokens": 32, "tools": True}
#: Files a loader might be tricked into running; each, if run, leaves a marker beside itself.
PLANTED = ("modeling_evil.py", "tokenization_evil.py", "__init__.py", "sitecustomize.py",
           "srelib_prompt.py", "custom_generate/generate.py")


def _plant(folder: Path) -> Path:
    marker = folder / "RAN"
    for name in PLANTED:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"open({str(marker)!r}, 'w').write({name!r})\n")
    return marker


@pytest.mark.parametrize("key, value, problem", [
    ("max_new_tokens", 10**9, "from 1 to 8192"), ("max_new_tokens", True, "must be of type int"),
    ("obs_chars", "7000", "must be of type int"), ("obs_chars", 7000.0, "must be of type int"),
    ("max_history", -1, "from 0 to 200"), ("max_prompt_chars", 10**12, "from 500"),
    ("system_prompt", "x" * 100_000, "its length is 100000"), ("system_prompt", "", "its length is 0"),
    ("system_prompt", ["a"], "must be of type str"), ("tools", "yes", "must be of type bool"),
    ("eval", "__import__('os')", "unknown keys"),
])
def test_hostile_prompt_settings_are_refused_by_name(tmp_path, key, value, problem):
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({**GOOD, key: value}))
    with pytest.raises(ValueError, match=problem) as error:
        saved_settings(tmp_path)
    assert key in str(error.value)
    with pytest.raises(ValueError, match=problem):
        save_settings(tmp_path, {**GOOD, key: value})


@pytest.mark.parametrize("text, problem", [
    ("[1, 2]", "JSON object"), ("{", "not valid JSON"), ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ('{"obs_chars": ' + "9" * 5000 + "}", "not valid JSON|from 100"), (" " * (MAX_JSON_BYTES + 1), "over"),
])
def test_malformed_settings_files_are_refused(tmp_path, text, problem):
    (tmp_path / SETTINGS_FILE).write_text(text)
    with pytest.raises(ValueError, match=problem):
        saved_settings(tmp_path)


@pytest.mark.parametrize("name, config, problem", [
    ("config.json", {"model_type": "gemma3_text", "auto_map": {"AutoModelForCausalLM": "modeling_evil.M"}},
     "auto_map"),
    ("tokenizer_config.json", {"auto_map": {"AutoTokenizer": ["tokenization_evil.T", None]}}, "auto_map"),
    ("config.json", {"model_type": "gemma3", "text_config": {"hidden_size": 10**9}}, "hidden_size"),
    ("config.json", {"vocab_size": True}, "vocab_size"), ("config.json", {"num_hidden_layers": "2"}, "layers"),
    ("generation_config.json", {"max_new_tokens": 10**9}, "max_new_tokens"),
])
def test_model_json_naming_code_or_hostile_sizes_is_refused_before_any_loading(tmp_path, name, config,
                                                                               problem):
    from srelib.policies import HFTransformersChatPolicy

    marker = _plant(tmp_path)
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(GOOD))
    (tmp_path / name).write_text(json.dumps(config))
    with pytest.raises(ValueError, match=problem):
        HFTransformersChatPolicy(str(tmp_path), load_in_4bit=False)
    assert not marker.exists()


def test_a_real_saved_agent_loads_and_acts_without_running_code_from_its_folder(tmp_path):
    from srelib.policies import HFTransformersChatPolicy
    from srelib.training.tiny_model import tiny_chat_model

    folder = Path(tiny_chat_model(tmp_path / "agent", train_steps=0, vocab_size=300))
    marker = _plant(folder)
    save_settings(folder, {**GOOD, "tools": False, "max_new_tokens": 4})
    policy = HFTransformersChatPolicy(str(folder), load_in_4bit=False, temperature=0)
    assert policy.max_new_tokens == 4 and policy.max_history == 40
    action = policy({"incident_title": "t", "current_phase": 1, "steps_taken": 0,
                     "valid_actions": ["view_alerts"]}, 1, "memory_leak")
    assert isinstance(action, dict) and not marker.exists()
    assert check_settings(GOOD) == GOOD


def test_a_notebook_without_the_agent_says_how_long_training_takes(tmp_path, monkeypatch):
    """Notebooks 04, 05 and 07 print this on a machine with no saved agent (the wheel check
    runs notebook 05 so, in a fresh environment): where it would be, what training it costs,
    and that only a first run pays."""
    from srelib.training.agent import TRAINING_TIME, default_agent_dir, find_agent, missing_agent_note

    monkeypatch.setenv("SRELIB_AGENT_HOME", str(tmp_path))
    assert find_agent() is None
    note = missing_agent_note("this run uses the tiny test model instead")
    assert note.startswith(f"No saved agent in {default_agent_dir()}: this run uses the tiny")
    assert TRAINING_TIME in note and "srelib agent train" in note and "reused" in note
    for name in ("04_llm_openai", "05_gemma_colab", "07_train"):
        source = (Path(__file__).resolve().parents[1] / "notebooks" / "src" / f"{name}.py")
        assert "missing_agent_note(" in source.read_text(), name
