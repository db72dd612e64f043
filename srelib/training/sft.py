"""SFT warm start: teach a chat model the action format from scripted episodes, with TRL.

:func:`demonstrations` plays the reference and heuristic policies on the train tasks and turns
every agent turn into a prompt-completion pair (:mod:`srelib.training.trajectories`: the chat the policy
would have seen, the action as JSON); :func:`sft_train` runs ``trl.SFTTrainer`` on them, the
loss on the completions only. Small models get a compact prompt (:data:`COMPACT_PROMPT`: a
short system text, short observations, little history); a chat policy must then prompt them
with the same settings.
"""

from __future__ import annotations

import logging
from typing import Iterable, Sequence

from srelib.extras import require

log = logging.getLogger(__name__)

COMPACT_SYSTEM_PROMPT = (
    "You are the on-call SRE for a system of seven services. Each turn, reply with exactly one "
    'JSON object and nothing else: {"action_type": ..., "target_service": ..., "parameters": '
    "{...}}, choosing from the valid actions listed.")
#: Transcript settings for small models (see srelib.policies.llm.prompts.Transcript).
COMPACT_PROMPT = {"system": COMPACT_SYSTEM_PROMPT, "obs_chars": 1200, "max_history": 1,
                  "max_chars": 5000}
DEMONSTRATORS = ("reference", "heuristic")


def demonstrations(seeds: Iterable[int] = range(3), tasks: str | Sequence[str] = "all",
                   pools: Sequence[str] = ("A", "B", "C"),
                   demonstrators: Sequence[str] = DEMONSTRATORS, prompt: dict | None = None,
                   min_score: float | None = None, **evaluate_kwargs) -> list[dict]:
    """Prompt-completion rows (system folded into the first user turn, as Gemma needs) from
    the ``demonstrators``' episodes on ``tasks`` x ``pools`` x ``seeds``; with ``min_score``,
    only from the episodes whose final score reaches it."""
    import tempfile

    from srelib.policies.llm.prompts import fold_system
    from srelib.policies.registry import scripted_policy
    from srelib.results.store import load_episodes
    from srelib.runners.rollout import evaluate
    from srelib.training.trajectories import turn_rows

    evaluate_kwargs.setdefault("progress", False)
    with tempfile.TemporaryDirectory(prefix="srelib-demos-") as out:
        evaluate({name: scripted_policy(name) for name in demonstrators}, tasks=tasks,
                 pools=list(pools), seeds=list(seeds), out=out, **evaluate_kwargs)
        episodes = load_episodes(out)
    return [{"prompt": fold_system(row["prompt"]), "completion": row["completion"]}
            for row in turn_rows(episodes, **(prompt or COMPACT_PROMPT))
            if min_score is None or row["score"] >= min_score]


def sft_train(model, tokenizer, rows: list[dict], output_dir, *, epochs: float = 2.0,
              learning_rate: float = 3e-3, batch_size: int = 8, max_length: int = 2048,
              tools: list | None = None, conversations: bool = False,
              max_completion: int | None = None, peft_config=None, seed: int = 0,
              **config_overrides):
    """Fine-tune ``model`` on ``rows`` with ``trl.SFTTrainer`` (loss on completions only) and
    return the trainer. A row longer than ``max_length`` tokens loses the start of its prompt,
    never its completion; a completion alone longer than that, or than ``max_completion``
    tokens, is not learnt, with a warning.
    With ``conversations``, consecutive rows of which each extends the one before (the turns of
    one episode, when the prompt keeps the whole history) become one example with every
    completion learnt: each token is encoded once instead of once per later turn.
    ``tools`` (e.g. :func:`srelib.policies.llm.tools.tool_definitions`) go to the chat template;
    ``peft_config`` (e.g. ``peft.LoraConfig``) trains adapters only."""
    require("torch", "srelib.training.sft")
    import torch
    require("datasets", "srelib.training.sft")
    from datasets import Dataset
    require("trl", "srelib.training.sft")
    from trl import SFTConfig, SFTTrainer

    from srelib.policies.llm.providers.hf_chat import native_bf16
    from srelib.training.labelled_positions import labelled_positions_only

    if not epochs > 0:
        raise ValueError(f"epochs must be more than 0, got {epochs}")
    if not rows:
        raise ValueError("no rows to learn from: the demonstrations gave none (too few seeds, "
                         "or no episode reached the minimum score)")
    turns = [_turn_ids(r, tokenizer, tools) for r in rows]
    chains = _chains(turns) if conversations else [[t] for t in turns]
    longest = min(max_length, max_completion or max_length)
    examples = [e for e in (_example(c, max_length, longest) for c in chains) if e]
    too_long = sum(len(ids) - shared > longest for ids, shared in turns)
    if not examples:
        raise ValueError(f"every completion is longer than max_length={max_length} tokens")
    if too_long:
        log.warning("sft_train: %d of %d rows have a completion longer than %d tokens and "
                    "are not learnt", too_long, len(rows), longest)
    settings = {"logging_steps": 10, "lr_scheduler_type": "cosine", **config_overrides}
    config = SFTConfig(output_dir=str(output_dir), num_train_epochs=epochs,
                       learning_rate=learning_rate, per_device_train_batch_size=batch_size,
                       max_length=None, completion_only_loss=True, save_strategy="no",
                       report_to="none", seed=seed, bf16=native_bf16(),
                       use_cpu=not torch.cuda.is_available(), **settings)
    trainer = SFTTrainer(model=model, args=config, train_dataset=Dataset.from_list(examples),
                         processing_class=tokenizer, peft_config=peft_config)
    with labelled_positions_only():
        trainer.train()
    return trainer


def _turn_ids(row: dict, tokenizer, tools: list | None) -> tuple[list[int], int]:
    """The token ids of a row's prompt and completion, and where its completion starts."""
    prompt = tokenizer.apply_chat_template(row["prompt"], tools=tools, add_generation_prompt=True,
                                           tokenize=True, return_dict=True)["input_ids"]
    full = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tools=tools,
                                         tokenize=True, return_dict=True)["input_ids"]
    shared = next((i for i, (a, b) in enumerate(zip(prompt, full)) if a != b),
                  min(len(prompt), len(full)))
    return full, shared


def _chains(turns: list[tuple[list[int], int]]) -> list[list[tuple[list[int], int]]]:
    """``turns`` in runs where each one's ids begin with the previous one's ids."""
    chains: list[list[tuple[list[int], int]]] = []
    for ids, shared in turns:
        before = chains[-1][-1][0] if chains else None
        if before is not None and len(ids) > len(before) and ids[:len(before)] == before:
            chains[-1].append((ids, shared))
        else:
            chains.append([(ids, shared)])
    return chains


def _example(chain: list[tuple[list[int], int]], max_length: int,
             max_completion: int | None = None) -> dict | None:
    """``input_ids`` and ``labels`` of the last turn's ids with every turn's completion
    labelled (one no longer than ``max_completion``, default ``max_length``), ending with the
    last labelled completion and cut from the left to ``max_length`` tokens; None if no
    completion is labelled."""
    full = chain[-1][0]
    labels = [-100] * len(full)
    end = 0
    for ids, shared in chain:
        if len(ids) - shared <= (max_completion or max_length):
            labels[shared:len(ids)] = ids[shared:]
            end = len(ids)
    if not end:
        return None
    return {"input_ids": full[:end][-max_length:], "labels": labels[:end][-max_length:]}
