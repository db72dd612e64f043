"""GRPO on the environment with TRL's own trainer and loss.

:func:`grpo_train` hands :class:`~srelib.training.environment.IncidentToolEnv` to
``trl.GRPOTrainer(environment_factory=...)``: the model plays incidents by calling the actions as
tools, each rollout is scored by the episode score, and TRL computes the group advantages, the
clipped loss and the KL to the reference model. Each training row names a rollout index, so all
``num_generations`` completions of a prompt play the same incident (a GRPO group) and a run
reproduces. Besides TRL's own logs (reward, KL, ...), ``parse_failure_rate`` is logged: the share
of the model's turns that were not an action.
"""

from __future__ import annotations

from typing import Any

from srelib.extras import require
from srelib.policies.llm.prompts import TOOL_SYSTEM_PROMPT

#: Characters of each observation in a rollout, unless the model's folder says otherwise.
ROLLOUT_OBS_CHARS = 4000


def parse_failure_rate(completions: list, environments: list, **_: Any) -> list[float]:
    """Per rollout, the share of the model's turns that were not a readable action: a reply
    without a tool call while the episode still ran, or a call that was not an action."""
    rates = []
    for messages, environment in zip(completions, environments):
        turns = [m for m in messages if m.get("role") == "assistant"]
        silent = sum(1 for m in turns if not m.get("tool_calls"))
        failures = environment.unreadable_calls + (silent if not environment.done else 0)
        rates.append(min(1.0, failures / max(1, len(turns))))
    return rates


def training_rows(count: int, start: int = 0, system: str = TOOL_SYSTEM_PROMPT) -> list[dict]:
    """``count`` prompt rows, one rollout index each: ``system``, to which TRL appends the
    incident that ``reset`` returns, as a tool-turn transcript opens."""
    return [{"prompt": [{"role": "user", "content": f"{system}\n\n"}], "rollout": start + i}
            for i in range(count)]


def rollout_prompt(model, obs_chars: int | None = None,
                   system_prompt: str | None = None) -> dict:
    """The chat-policy prompt settings of :func:`grpo_train`'s rollouts for ``model``: the
    given ones, else those a model folder was saved with (as by ``srelib agent train``), else
    :data:`~srelib.policies.llm.prompts.TOOL_SYSTEM_PROMPT` and :data:`ROLLOUT_OBS_CHARS` characters
    per observation; always in tool turns. A chat policy given them prompts a model as GRPO
    trained it. A folder saved by an agent that answers in text raises ValueError."""
    from srelib.policies.llm.saved import saved_settings

    saved = saved_settings(model) if isinstance(model, str) else {}
    if saved and not saved.get("tools"):
        raise ValueError(f"{model} was trained to answer in JSON text, but GRPO's rollouts call "
                         "tools: start from a tool-calling agent (srelib agent train, without "
                         "--text)")
    return {**saved, "obs_chars": obs_chars or saved.get("obs_chars", ROLLOUT_OBS_CHARS),
            "system_prompt": system_prompt or saved.get("system_prompt", TOOL_SYSTEM_PROMPT),
            "tools": True}


def grpo_train(model, tokenizer, output_dir, *, distribution=None, steps: int = 2,
               num_generations: int = 2, prompts_per_step: int = 1,
               max_completion_length: int = 128, max_turns: int = 8, learning_rate: float = 1e-5,
               beta: float = 0.04, temperature: float = 1.0, obs_chars: int | None = None,
               system_prompt: str | None = None, peft_config=None, seed: int = 0,
               **config_overrides):
    """Train ``model`` (a model or its id/path) with GRPO for ``steps`` optimiser steps and
    return the trainer (``trainer.state.log_history`` holds the logged metrics).

    ``tokenizer`` must render tools and parse tool calls (see
    :func:`srelib.training.chat_format.use_tool_format`); ``distribution`` is the
    :class:`~srelib.training.environment.TaskDistribution` of incidents; ``max_turns`` caps the
    tool calls of one rollout and ``max_completion_length`` its tokens, tool results included;
    ``system_prompt`` opens the conversation and ``obs_chars`` bounds each observation (see
    :func:`rollout_prompt`); ``peft_config`` (e.g. ``peft.LoraConfig``) trains adapters only.
    """
    import functools

    require("torch", "srelib.training.grpo")
    import torch
    require("datasets", "srelib.training.grpo")
    from datasets import Dataset
    require("trl", "srelib.training.grpo")
    from trl import GRPOConfig, GRPOTrainer

    from srelib.policies.llm.providers.hf_chat import native_bf16
    from srelib.training.environment import IncidentToolEnv, TaskDistribution
    from srelib.training.labelled_positions import labelled_positions_only

    counts = {"steps": (steps, 1), "num_generations": (num_generations, 2),
              "prompts_per_step": (prompts_per_step, 1),
              "max_completion_length": (max_completion_length, 1), "max_turns": (max_turns, 1)}
    for name, (value, least) in counts.items():
        if not (isinstance(value, int) and value >= least):
            raise ValueError(f"{name} must be a whole number of at least {least}, got {value!r}"
                             + (" (a GRPO group compares rollouts)" if least == 2 else ""))
    prompt = rollout_prompt(model, obs_chars, system_prompt)
    batch = num_generations * prompts_per_step
    config = GRPOConfig(
        output_dir=str(output_dir), max_steps=steps, per_device_train_batch_size=batch,
        num_generations=num_generations, max_completion_length=max_completion_length,
        max_tool_calling_iterations=max_turns, learning_rate=learning_rate, beta=beta,
        temperature=temperature, logging_steps=1, save_strategy="no", report_to="none",
        seed=seed, reward_weights=[0.0], bf16=native_bf16(), use_cpu=not torch.cuda.is_available(),
        **config_overrides)
    factory = functools.partial(IncidentToolEnv, distribution or TaskDistribution(seed=seed),
                                obs_chars=prompt["obs_chars"])
    rows = training_rows(steps * prompts_per_step, system=prompt["system_prompt"])
    trainer = GRPOTrainer(model=model, reward_funcs=[parse_failure_rate], args=config,
                          train_dataset=Dataset.from_list(rows),
                          processing_class=tokenizer, environment_factory=factory,
                          peft_config=peft_config)
    with labelled_positions_only():
        trainer.train()
    return trainer
