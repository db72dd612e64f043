"""The small agent: SFT on scripted demonstrations makes a model that acts, and acts usefully.

The agent ``make agent`` saved for this checkout and machine class is measured when it is there
(``default_agent_dir``); otherwise it is trained here first, into a temporary folder.
"""

import json
import shutil

import pytest

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    from srelib.training.agent import find_agent, train_agent

    return find_agent() or train_agent(tmp_path_factory.mktemp("agent"), log=lambda _: None)


@pytest.fixture(scope="module")
def measured(agent):
    from srelib.training.agent import agent_policy, measure_agent

    return measure_agent(agent_policy(agent))


def test_the_agent_writes_actions_on_held_out_seeds(measured):
    frame = measured["frame"]
    mine = frame[frame["policy"] == "agent"]
    assert set(mine["seed"]) == {1000, 1001, 1002, 1003} and set(mine["pool"]) == {"A", "C"}
    assert measured["parse_failure_rate"] <= 0.10


def test_grpo_starts_from_the_agents_folder_and_its_rollouts_call_tools(agent, tmp_path):
    from transformers import AutoTokenizer

    from srelib.training.grpo import grpo_train

    trainer = grpo_train(agent, AutoTokenizer.from_pretrained(agent), tmp_path, steps=1,
                         max_turns=3, max_completion_length=1024, disable_tqdm=True)
    logged = trainer.state.log_history[0]
    assert logged["rewards/parse_failure_rate/mean"] <= 0.5, logged
    assert logged["tools/call_frequency"] > 0 and 0.0 <= logged["reward"] <= 1.0


def test_a_text_agent_answers_in_json_text(tmp_path):
    """``train_agent(tools=False)`` (here briefly, on one seed) saves an agent prompted with
    JSON-text actions and a short history, which GRPO's tool-calling rollouts refuse."""
    from transformers import AutoTokenizer

    from srelib.training.agent import AGENT_PROMPT, agent_policy, train_agent
    from srelib.training.grpo import grpo_train

    folder = train_agent(tmp_path / "text_agent", seeds=[0], epochs=1, tools=False,
                         log=lambda _: None)
    policy = agent_policy(folder)
    assert not policy.tools and not policy.tool_turns
    assert (policy.system_prompt, policy.max_history) == (AGENT_PROMPT["system_prompt"],
                                                          AGENT_PROMPT["max_history"])
    prompt = policy.chat_prompt([{"role": "user", "content": "x"}])
    assert "view_alerts(" not in prompt and "<start_of_turn>model" in prompt
    with pytest.raises(ValueError, match="trained to answer in JSON text.*srelib agent train"):
        grpo_train(folder, AutoTokenizer.from_pretrained(folder), tmp_path / "grpo")


def test_a_short_training_still_reports_its_loss_and_saves(tmp_path):
    """One seed for one epoch is fewer optimiser steps than one log of the loss: the agent is
    saved and the summary gives the mean loss (this used to end in an IndexError)."""
    from srelib.training.agent import PROVENANCE_FILE, agent_key, find_agent, train_agent

    lines = []
    folder = train_agent(tmp_path / "short", seeds=[5], epochs=1, log=lines.append)
    assert find_agent(folder) == folder
    assert "mean loss" in lines[-1] and f"saved to {folder}" in lines[-1]
    record = json.loads((tmp_path / "short" / PROVENANCE_FILE).read_text())
    assert record["key"] == agent_key(seeds=[5], epochs=1) and len(record["data"]) == 64
    assert record["options"]["seeds"] == [5] and record["cpu_capability"]


def test_the_agent_beats_the_null_policy_with_a_ci_above_its_mean(measured):
    """The agent's 95% CI lies above the null policy's mean. The paired difference's CI is not
    asserted: its lower end sits near 0 (-0.005 on a machine where this model was trained, above
    0 on others), and a trained model's numbers must hold on any CPU."""
    scores = measured["scores"].set_index("policy")
    assert scores.loc["agent", "ci_low"] > scores.loc["null", "mean"], measured["scores"]
    assert scores.loc["agent - null (paired)", "mean"] > 0, measured["scores"]


def test_the_saved_prompt_settings_are_the_policys_defaults(agent, tmp_path):
    from srelib.policies import HFTransformersChatPolicy
    from srelib.policies.llm.saved import SETTINGS_FILE
    from srelib.training.agent import TOOL_AGENT_PROMPT as PROMPT

    policy = HFTransformersChatPolicy(agent, load_in_4bit=False)
    assert (policy.system_prompt, policy.obs_chars, policy.max_history, policy.max_new_tokens,
            policy.tools, policy.tool_turns) == (
        PROMPT["system_prompt"], PROMPT["obs_chars"], PROMPT["max_history"],
        PROMPT["max_new_tokens"], True, True)
    assert HFTransformersChatPolicy(agent, load_in_4bit=False, obs_chars=300).obs_chars == 300

    broken = tmp_path / "broken"
    shutil.copytree(agent, broken)
    (broken / SETTINGS_FILE).write_text(json.dumps({"obs_char": 300}))
    with pytest.raises(ValueError, match="obs_chars"):
        HFTransformersChatPolicy(str(broken), load_in_4bit=False)


def test_measuring_a_folder_without_an_agent_names_it_and_the_fix(tmp_path, capsys):
    from srelib.cli import main

    with pytest.raises(SystemExit):
        main(["agent", "measure", str(tmp_path)])
    error = capsys.readouterr().err
    assert str(tmp_path) in error and "srelib agent train" in error


def test_a_long_turn_loses_the_start_of_its_prompt_never_its_completion(agent):
    from transformers import AutoTokenizer

    from srelib.training.sft import _example, _turn_ids

    tokenizer = AutoTokenizer.from_pretrained(agent)
    answer = '{"action_type": "view_alerts", "parameters": {}, "target_service": null}'
    row = {"prompt": [{"role": "user", "content": "x y z " * 400}],
           "completion": [{"role": "assistant", "content": answer}]}
    cut = _example([_turn_ids(row, tokenizer, None)], 64)
    assert len(cut["input_ids"]) == len(cut["labels"]) == 64
    kept = [t for t in cut["labels"] if t != -100]
    assert answer in tokenizer.decode(kept) and kept == cut["input_ids"][-len(kept):]
    assert _example([_turn_ids(row, tokenizer, None)], 1) is None  # the completion alone is longer
