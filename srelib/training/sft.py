"""SFT warm start: teach a chat model the action format from scripted episodes, with TRL.

:func:`demonstrations` plays the reference and heuristic policies on the train tasks and turns
every agent turn into a prompt-completion pair (:mod:`srelib.trajectories`: the chat the policy
would have seen, the action as JSON); :func:`sft_train` runs ``trl.SFTTrainer`` on them, the
loss on the completions only. Small models get a compact prompt (:data:`COMPACT_PROMPT`: a
short system text, short observations, little history); a chat policy must then prompt them
with the same settings.
"""

from __future__ import annotations

from typing import Iterable, Sequence

COMPACT_SYSTEM_PROMPT = (
    "You are the on-call SRE for a system of seven services. Each turn, reply with exactly one "
    'JSON object and nothing else: {"action_type": ..., "target_service": ..., "parameters": '
    "{...}}, choosing from the valid actions listed.")
#: Transcript settings for small models (see srelib.policies.prompts.Transcript).
COMPACT_PROMPT = {"system": COMPACT_SYSTEM_PROMPT, "obs_chars": 1200, "max_history": 1,
                  "max_chars": 5000}
DEMONSTRATORS = ("reference", "heuristic")


def demonstrations(seeds: Iterable[int] = range(3), tasks: str | Sequence[str] = "all",
                   pools: Sequence[str] = ("A", "B", "C"),
                   demonstrators: Sequence[str] = DEMONSTRATORS, prompt: dict | None = None,
                   **evaluate_kwargs) -> list[dict]:
    """Prompt-completion rows (system folded into the first user turn, as Gemma needs) from
    the ``demonstrators``' episodes on ``tasks`` x ``pools`` x ``seeds``."""
    import tempfile

    from srelib.policies.prompts import fold_system
    from srelib.policies.registry import scripted_policy
    from srelib.results import load_episodes
    from srelib.rollout import evaluate
    from srelib.trajectories import turn_rows

    evaluate_kwargs.setdefault("progress", False)
    with tempfile.TemporaryDirectory(prefix="srelib-demos-") as out:
        evaluate({name: scripted_policy(name) for name in demonstrators}, tasks=tasks,
                 pools=list(pools), seeds=list(seeds), out=out, **evaluate_kwargs)
        episodes = load_episodes(out)
    return [{"prompt": fold_system(row["prompt"]), "completion": row["completion"]}
            for row in turn_rows(episodes, **(prompt or COMPACT_PROMPT))]


def sft_train(model, tokenizer, rows: list[dict], output_dir, *, epochs: float = 2.0,
              learning_rate: float = 3e-3, batch_size: int = 8, max_length: int = 2048,
              peft_config=None, seed: int = 0, **config_overrides):
    """Fine-tune ``model`` on ``rows`` with ``trl.SFTTrainer`` (loss on completions only) and
    return the trainer. A row longer than ``max_length`` tokens loses the start of its prompt,
    never its completion. ``peft_config`` (e.g. ``peft.LoraConfig``) trains adapters only."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from srelib.policies.hf_chat import native_bf16

    settings = {"logging_steps": 10, "lr_scheduler_type": "cosine",
                "truncation_mode": "keep_end", **config_overrides}
    config = SFTConfig(output_dir=str(output_dir), num_train_epochs=epochs,
                       learning_rate=learning_rate, per_device_train_batch_size=batch_size,
                       max_length=max_length, completion_only_loss=True, save_strategy="no",
                       report_to="none", seed=seed, bf16=native_bf16(),
                       use_cpu=not torch.cuda.is_available(), **settings)
    trainer = SFTTrainer(model=model, args=config, train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer, peft_config=peft_config)
    trainer.train()
    return trainer
