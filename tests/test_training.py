"""Training support: actions as tools, the TRL environment adapter, GRPO and SFT with TRL."""

import inspect

import pytest

import srelib
from srelib.env.actions import ACTION_SPECS, PARSE_ERROR, PHASE1_ACTIONS, PHASE2_ACTIONS, ActionType
from srelib.env.parse import parse_action
from srelib.policies import ReferencePolicy, call_reset
from srelib.policies.llm.tools import action_from_tool_call, tool_definitions

pytest.importorskip("trl")


def test_tools_are_the_text_paths_actions():
    names = [t["function"]["name"] for t in tool_definitions()]
    assert names == [a.value for a in ActionType]
    assert {t["function"]["name"] for t in tool_definitions(2)} == {a.value for a in PHASE2_ACTIONS}
    assert {a.value for a in PHASE1_ACTIONS} < {t["function"]["name"] for t in tool_definitions(1)}
    logs = next(t["function"] for t in tool_definitions() if t["function"]["name"] == "query_logs")
    assert logs["parameters"]["required"] == ["target_service"]
    assert logs["parameters"]["properties"]["limit"]["type"] == "integer"
    with pytest.raises(ValueError, match="phase must be"):
        tool_definitions(3)


def test_a_tool_call_is_the_action_the_text_parser_reads():
    env = srelib.IncidentEnv()
    observation, _ = env.reset(task="memory_leak", pool="C", seed=0)
    read = 0
    for spelled in observation["valid_actions"]:
        text = parse_action(spelled, observation["valid_actions"]).action
        if text is None:  # an action that needs parameters cannot be spelled bare
            continue
        read += 1
        name, _, target = spelled.partition(":")
        call = action_from_tool_call(name, {"target_service": target} if target else "{}")
        assert (call["action_type"], call["target_service"]) == (text["action_type"],
                                                                  text.get("target_service"))
    assert read >= 10
    for bad in [("nope", {}), ("query_logs", "{not json"), ("query_logs", [1, 2])]:
        assert action_from_tool_call(*bad)["action_type"] == PARSE_ERROR


def test_the_adapter_plays_an_episode_to_the_environments_own_score():
    from srelib.training.environment import IncidentToolEnv, TaskDistribution

    distribution = TaskDistribution(tasks=["memory_leak", "aliased_fault"], seed=3)
    assert distribution.draw(7) == distribution.draw(7)
    assert len({distribution.draw(i) for i in range(20)}) > 1
    tool_env = IncidentToolEnv(distribution)
    opening = tool_env.reset(rollout=7)
    task, pool, seed = distribution.draw(7)
    assert opening.startswith("INCIDENT")
    policy = ReferencePolicy()
    call_reset(policy, seed=seed, task_name=task)
    env = srelib.IncidentEnv()
    observation, _ = env.reset(task=task, pool=pool, seed=seed)
    done = False
    while not done:
        action = policy(observation, observation["current_phase"], task)
        observation, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        method = getattr(tool_env, action["action_type"])
        arguments = dict(action.get("parameters") or {})
        if action.get("target_service"):
            arguments["target_service"] = action["target_service"]
        method(**arguments)
    assert tool_env.done and tool_env.get_reward() == info["score"]["final"]
    assert "over" in tool_env.view_alerts()


def test_the_adapter_resets_to_a_dataset_rows_task_pool_and_seed():
    """GRPOTrainer calls reset(**row): the row's task, pool and seed choose the incident, a row
    without them draws it for its rollout, and other columns are ignored."""
    from srelib.training.environment import IncidentToolEnv, TaskDistribution

    tool_env = IncidentToolEnv(TaskDistribution(tasks=["memory_leak"], pools=("C",), seed=1))
    tool_env.reset(prompt=[{"role": "user", "content": "-"}], task="aliased_fault", pool="A", seed=5)
    assert {k: tool_env.info[k] for k in ("task", "pool", "seed")} == \
        {"task": srelib.task_id("aliased_fault"), "pool": "A", "seed": 5}  # info names no story
    tool_env.reset(rollout=2, seed=9)
    assert (tool_env.info["task"], tool_env.info["pool"], tool_env.info["seed"]) == (
        srelib.task_id("memory_leak"), "C", 9)
    tool_env.reset(rollout=2)
    task, pool, seed = tool_env.distribution.draw(2)
    assert (tool_env.info["task"], tool_env.info["pool"], tool_env.info["seed"]) == (
        srelib.task_id(task), pool, seed)
    with pytest.raises(ValueError, match="pool"):
        tool_env.reset(task="memory_leak", pool="Z")


def test_every_action_method_has_a_typed_signature_and_docstring():
    from transformers.utils import get_json_schema

    from srelib.training.environment import IncidentToolEnv

    tool_env = IncidentToolEnv()
    for action, spec in ACTION_SPECS.items():
        method = getattr(tool_env, action.value)
        schema = get_json_schema(method)["function"]
        assert schema["name"] == action.value and schema["description"]
        expected = set(spec.params) | ({"target_service"} if spec.targeted else set())
        assert set(schema["parameters"]["properties"]) == expected
        assert inspect.signature(method).return_annotation is str


def test_a_chat_policys_tool_turns_are_the_conversation_of_a_grpo_rollout():
    """What a policy with tools=True sees is what GRPOTrainer builds with IncidentToolEnv: the
    same messages, turn for turn, and the same tool lines in the template."""
    import json

    from srelib.policies.llm.prompts import TOOL_SYSTEM_PROMPT, Transcript
    from srelib.training.tiny_model import chat_tokenizer
    from srelib.training.chat_format import use_tool_format
    from srelib.training.environment import IncidentToolEnv, TaskDistribution
    from srelib.training.grpo import training_rows

    tool_env = IncidentToolEnv(TaskDistribution(tasks=["memory_leak"], pools=("C",)),
                               obs_chars=1500)
    rollout = [{**training_rows(1)[0]["prompt"][0]}]
    rollout[0]["content"] += tool_env.reset(rollout=0)  # as TRL appends reset's text
    task, pool, seed = tool_env.distribution.draw(0)
    env = srelib.IncidentEnv()
    transcript = Transcript(TOOL_SYSTEM_PROMPT, obs_chars=1500, max_history=50,
                            max_chars=10**6, tool_turns=True)
    transcript.add_observation(env.reset(task=task, pool=pool, seed=seed)[0])
    calls = [("view_alerts", {}), ("check_deploy_history", {"target_service": "orders"}),
             ("rollback_deploy", {"target_service": "orders"}),
             ("scale_service", {"target_service": "orders", "replicas": 10**6}),  # out of range
             ("read_file", {"path": "orders/app.py"})]  # a phase-2 action in phase 1
    for name, arguments in calls:
        rollout.append({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": name, "arguments": arguments}}]})
        rollout.append({"role": "tool", "name": name,
                        "content": getattr(tool_env, name)(**arguments)})
        target = arguments.get("target_service")
        action = {"action_type": name, "target_service": target,
                  "parameters": {k: v for k, v in arguments.items() if k != "target_service"}}
        transcript.add_reply(json.dumps(action))
        transcript.add_observation(env.step(action)[0])
    assert transcript.messages() == rollout
    assert all("LAST ACTION (FAILED)" in rollout[i]["content"] for i in (-3, -1))

    template = use_tool_format(chat_tokenizer(["-"], 300))
    methods = [getattr(tool_env, a.value) for a in ActionType]
    assert template.apply_chat_template(rollout, tools=methods, tokenize=False) == \
        template.apply_chat_template(rollout, tools=tool_definitions(), tokenize=False)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from srelib.training.tiny_model import tiny_chat_model

    return tiny_chat_model(tmp_path_factory.getbasetemp() / "tiny_chat_model")


def test_grpo_runs_with_trls_trainer_and_logs_reward_kl_and_parse_failures(tiny, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from srelib.training.chat_format import use_tool_format
    from srelib.training.grpo import grpo_train

    tokenizer = use_tool_format(AutoTokenizer.from_pretrained(tiny))
    model = AutoModelForCausalLM.from_pretrained(tiny)
    trainer = grpo_train(model, tokenizer, tmp_path, steps=1, max_completion_length=16,
                         max_turns=2)
    logged = trainer.state.log_history[0]
    for key in ("reward", "kl", "rewards/parse_failure_rate/mean", "rewards/IncidentToolEnv/mean"):
        assert key in logged, sorted(logged)
    assert 0.0 <= logged["rewards/parse_failure_rate/mean"] <= 1.0


def test_sft_on_demonstrations_lowers_the_completion_loss(tiny, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from srelib.training.sft import demonstrations, sft_train

    rows = demonstrations(seeds=[0], tasks=["memory_leak"], pools=["C"],
                          demonstrators=["reference"])
    assert rows and all(r["prompt"][0]["role"] == "user" for r in rows)
    trainer = sft_train(AutoModelForCausalLM.from_pretrained(tiny),
                        AutoTokenizer.from_pretrained(tiny), rows * 4, tmp_path, epochs=1,
                        batch_size=4, max_length=1024, logging_steps=1)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) >= 3 and losses[-1] < losses[0]


def test_a_cpu_projects_only_the_labelled_positions_for_the_same_loss(tiny, monkeypatch):
    """TRL's fused LM head scores every position on a CPU; within labelled_positions_only it
    scores only the learnt ones (as on CUDA), with the same loss and gradients."""
    import torch
    import trl.trainer.utils as trl_utils
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    from srelib.training.labelled_positions import labelled_positions_only

    projected = []
    fused = trl_utils._ChunkedLogProbFunction

    class Spy:
        @staticmethod
        def apply(hidden, *args):
            projected.append(hidden.shape[0])
            return fused.apply(hidden, *args)

    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", Spy)
    model = AutoModelForCausalLM.from_pretrained(tiny)
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    ids = torch.randint(0, model.config.vocab_size, (2, 40),
                        generator=torch.Generator().manual_seed(0))
    labels = torch.full_like(ids, -100)
    labels[0, 30:34], labels[1, 10:13] = ids[0, 30:34], ids[1, 10:13]

    def loss_and_gradient():
        model.zero_grad()
        loss = model(input_ids=ids, labels=labels, fused_lm_head=True).loss
        loss.backward()
        return loss.detach(), model.get_input_embeddings().weight.grad.clone()

    every = loss_and_gradient()
    with labelled_positions_only():
        compact = loss_and_gradient()
    again = loss_and_gradient()
    assert projected == [2 * 39, 7, 2 * 39]  # positions whose next token is learnt: 4 + 3
    torch.testing.assert_close(compact[0], every[0])
    torch.testing.assert_close(compact[1], every[1])
    torch.testing.assert_close(again[0], every[0])


def test_overlapping_blocks_leave_trls_own_test_as_it_was():
    """Two trainings whose blocks overlap (threads, or a GRPO inside an SFT loop): the CPU stays
    on the compact path until the last block closes, and TRL's own test is then restored."""
    import torch
    import trl.trainer.utils as trl_utils

    from srelib.training.labelled_positions import labelled_positions_only

    original, cpu = trl_utils._use_triton, torch.device("cpu")
    first, second = labelled_positions_only(), labelled_positions_only()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert trl_utils._use_triton(cpu)
    second.__exit__(None, None, None)
    assert trl_utils._use_triton is original and not original(cpu)


@pytest.mark.parametrize("epochs", [0, -1.0, float("nan")])
def test_sft_refuses_a_number_of_epochs_that_trains_nothing(tiny, tmp_path, epochs):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from srelib.training.sft import sft_train

    rows = [{"prompt": [{"role": "user", "content": "incident"}],
             "completion": [{"role": "assistant", "content": '{"action_type": "view_alerts"}'}]}]
    with pytest.raises(ValueError, match="epochs must be more than 0"):
        sft_train(AutoModelForCausalLM.from_pretrained(tiny), AutoTokenizer.from_pretrained(tiny),
                  rows, tmp_path, epochs=epochs)


def test_sft_with_no_demonstrations_says_so(tiny, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from srelib.training.sft import sft_train

    with pytest.raises(ValueError, match="no rows to learn from"):
        sft_train(AutoModelForCausalLM.from_pretrained(tiny), AutoTokenizer.from_pretrained(tiny),
                  [], tmp_path)


@pytest.mark.parametrize("bad", [{"steps": 0}, {"steps": 1.5}, {"num_generations": 1},
                                 {"prompts_per_step": 0}, {"max_completion_length": 0},
                                 {"max_turns": 0}])
def test_grpo_refuses_counts_that_train_nothing_before_loading_anything(tmp_path, bad):
    """A GRPO run with no steps, no tool call or a group of one would load a model and then
    fail inside TRL, or train on empty rollouts: it is refused first, naming the setting."""
    from srelib.training.grpo import grpo_train

    (name, value), = bad.items()
    with pytest.raises(ValueError, match=f"{name} must be a whole number of at least"):
        grpo_train(str(tmp_path / "no-model"), None, tmp_path, **bad)


@pytest.mark.parametrize("rank", [0, -4, 2.5])
def test_a_lora_rank_below_one_is_refused(rank):
    from srelib.training.lora import lora_config

    with pytest.raises(ValueError, match="LoRA rank must be a whole number"):
        lora_config(rank)


def test_an_episodes_turns_are_learnt_as_one_conversation():
    """With the whole history in every prompt, one episode is one SFT example: the last turn's
    tokens, with each turn's completion labelled exactly where its own row labels it."""
    from srelib.policies.llm.prompts import TOOL_SYSTEM_PROMPT
    from srelib.training.agent import agent_tokenizer
    from srelib.training.sft import _chains, _example, _turn_ids, demonstrations

    rows = demonstrations(seeds=[0], tasks=["memory_leak"], pools=["A", "C"],
                          demonstrators=["reference"],
                          prompt={"system": TOOL_SYSTEM_PROMPT, "obs_chars": 1500,
                                  "max_history": 40, "max_chars": 10**6, "tool_turns": True})
    tokenizer = agent_tokenizer(rows, 600, tool_definitions())
    turns = [_turn_ids(r, tokenizer, tool_definitions()) for r in rows]
    chains = _chains(turns)
    assert len(chains) == 2 and sum(len(c) for c in chains) == len(rows)  # pools A and C
    position = 0
    for chain in chains:
        example = _example(chain, 100_000)
        chain_rows = rows[position:position + len(chain)]
        position += len(chain)
        assert example["input_ids"] == chain[-1][0]
        learnt = 0
        for row in chain_rows:
            alone = _example([_turn_ids(row, tokenizer, tool_definitions())], 100_000)
            span = [i for i, label in enumerate(alone["labels"]) if label != -100]
            assert [example["labels"][i] for i in span] == [alone["labels"][i] for i in span]
            learnt += len(span)
        assert learnt == sum(label != -100 for label in example["labels"])


def test_a_hostile_reply_in_tool_turns_is_kept_as_text():
    from srelib.policies.llm.prompts import Transcript, tool_call_message

    transcript = Transcript(tool_turns=True)
    for reply in ("[" * 100_000, '{"action_type": "rm -rf", "parameters": {}}',
                  '{"action_type": "view_alerts", "parameters": [1]}', "not json"):
        assert tool_call_message(reply) is None
        transcript.add_reply(reply)
        assert transcript.turns[-1]["role"] == "assistant" and "tool_calls" not in transcript.turns[-1]
