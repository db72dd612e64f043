"""A saved agent's folder is keyed by what made it, so a stale agent is never picked up."""

import functools
import json
from pathlib import Path

import pytest

from srelib.training import agent as agent_module
from srelib.results import provenance


def test_the_key_changes_with_the_code_the_options_and_the_machine_class(tmp_path, monkeypatch):
    base = agent_module.agent_key()
    assert base == agent_module.agent_key(seeds=range(24))  # the defaults, spelt out
    assert agent_module.agent_key(epochs=1) != base
    assert agent_module.agent_key(seeds=[0, 1]) != base

    machine = provenance.machine_class()
    for field, other in (("cpu_capability", "DEFAULT" if machine["cpu_capability"] != "DEFAULT"
                          else "AVX2"), ("torch", "0.0.1"), ("transformers", "0.0.1")):
        monkeypatch.setattr(provenance, "machine_class", lambda: {**machine, field: other})
        assert agent_module.agent_key() != base, field
    monkeypatch.undo()

    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "core.py").write_text("x = 1\n")
    before = provenance.source_digest(tmp_path)
    (tmp_path / "env" / "core.py").write_text("x = 2\n")
    assert provenance.source_digest(tmp_path) != before
    (tmp_path / "env" / "__pycache__").mkdir()
    (tmp_path / "env" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0")
    assert provenance.source_digest(tmp_path) == provenance.source_digest(tmp_path)


def test_the_code_digest_covers_the_whole_package_not_the_module_s_own_folder():
    """The key reads every layer's files (the environment, the policies, the training), wherever
    the provenance module itself sits in the package."""
    import srelib

    assert provenance.PACKAGE == Path(srelib.__file__).resolve().parent
    for part in ("env/core.py", "policies/base.py", "training/agent.py", "results/store.py"):
        assert (provenance.PACKAGE / part).is_file(), part


def test_unknown_training_options_are_refused_by_name():
    with pytest.raises(ValueError, match="unknown training options \\['epoch'\\].*epochs"):
        agent_module.agent_key(epoch=2)


def test_an_agent_saved_under_another_key_is_not_found(tmp_path, monkeypatch):
    monkeypatch.setenv("SRELIB_AGENT_HOME", str(tmp_path))
    folder = agent_module.default_agent_dir()
    assert folder.parent == tmp_path and folder.name == f"agent-{agent_module.agent_key()}"
    stale = tmp_path / "agent-v3"  # the fixed name older checkouts saved under
    stale.mkdir()
    for name in ("config.json", "tokenizer.json", "srelib_prompt.json"):
        (stale / name).write_text("{}")
    assert agent_module.find_agent() is None
    assert agent_module.find_agent(stale) == str(stale)  # a folder named explicitly is used


class _Saves:
    """Stands in for a model or tokenizer: writes one file, or fails half-way."""

    def __init__(self, name, fail=False):
        self.name, self.fail = name, fail

    def save_pretrained(self, folder):
        (folder / self.name).write_text("{}")
        if self.fail:
            raise OSError("disk full")


def test_a_save_appears_whole_or_not_at_all(tmp_path):
    target = tmp_path / "agent-abc"
    with pytest.raises(OSError, match="disk full"):
        agent_module.save_agent(target, _Saves("config.json", fail=True),
                                _Saves("tokenizer.json"), {"obs_chars": 1200})
    assert list(tmp_path.iterdir()) == []
    record = {"key": "abc", "cpu_capability": "AVX2"}
    agent_module.save_agent(target, _Saves("config.json"), _Saves("tokenizer.json"),
                            {"obs_chars": 1200}, record)
    assert agent_module.find_agent(target) == str(target)
    assert json.loads((target / agent_module.PROVENANCE_FILE).read_text()) == record
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent-abc"]


def test_make_agents_command_trains_nothing_when_the_agent_is_saved(tmp_path, monkeypatch,
                                                                     capsys):
    from srelib.cli import main

    monkeypatch.setenv("SRELIB_AGENT_HOME", str(tmp_path))
    agent_module.save_agent(agent_module.default_agent_dir(), _Saves("config.json"),
                            _Saves("tokenizer.json"), {"obs_chars": 1200})
    untrained = functools.wraps(agent_module.train_agent)(lambda *a, **k: pytest.fail("trained"))
    monkeypatch.setattr(agent_module, "train_agent", untrained)
    assert main(["agent", "train", "--if-missing"]) == 0
    assert "already saved in" in capsys.readouterr().out


def test_a_folder_another_process_saved_first_is_kept(tmp_path):
    from srelib.results.saving import save_folder

    target = tmp_path / "model"

    def slow_write(scratch):  # another process finishes its save while this one writes
        (scratch / "config.json").write_text("mine")
        target.mkdir()
        (target / "config.json").write_text("theirs")

    assert save_folder(target, slow_write) == target
    assert (target / "config.json").read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_the_tiny_models_folder_is_keyed_by_its_code_and_machine_class(monkeypatch):
    from srelib.training import tiny_model

    base = tiny_model.default_model_dir()
    assert base.name.startswith("srelib-tiny-chat-model-")
    machine = provenance.machine_class()
    monkeypatch.setattr(provenance, "machine_class", lambda: {**machine, "torch": "0.0.1"})
    assert tiny_model.default_model_dir() != base
