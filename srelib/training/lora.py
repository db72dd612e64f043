"""The GPU recipe: a hub chat model (Gemma) warm-started with LoRA adapters, then GRPO.

:func:`load_for_training` checks access to a hub id before any download, loads the model as a
chat policy would (bf16 where native, else fp32; nf4 when ``load_in_4bit`` and CUDA is there)
and gives its tokenizer the tool chat format (:mod:`srelib.training.chat_format`; Gemma 3's own
template has no tools). :func:`lora_warm_start` trains LoRA adapters alone on the scripted
policies' episodes, each learnt as one conversation in the tool turns of a GRPO rollout and
prompted with :data:`LORA_PROMPT`; unlike the small agent, a model this size learns its patches
too. :func:`~srelib.training.grpo.grpo_train` given the trained ``PeftModel`` goes on training
the same adapters, its KL measured against a frozen copy of them (TRL's "ref" adapter).
:func:`lora_policy` plays a loaded or trained model with the prompt it learnt.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from srelib.extras import require
from srelib.training.agent import TOOL_AGENT_PROMPT, TRAIN_POOLS, agent_rows
from srelib.training.grpo import ROLLOUT_OBS_CHARS

#: How a LoRA-trained model is prompted: the tool turns of a GRPO rollout with the
#: observation length :func:`~srelib.training.grpo.rollout_prompt` gives a hub model, and room
#: for a patch's diff in one reply.
LORA_PROMPT = {**TOOL_AGENT_PROMPT, "obs_chars": ROLLOUT_OBS_CHARS, "max_new_tokens": 512}


def load_for_training(model_id: str, load_in_4bit: bool = False, quantization=None):
    """``(model, tokenizer)`` of ``model_id`` (a hub id or folder) ready for LoRA training, on
    the GPU when there is one. A hub id that cannot be read (gated, no token, offline) raises
    RuntimeError saying what to do; ``quantization`` (a ``BitsAndBytesConfig``) overrides the
    one ``load_in_4bit`` asks for."""
    require("torch", "srelib.training.lora")
    import torch
    require("transformers", "srelib.training.lora")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from srelib.policies.llm.providers.hf_chat import model_access_problem, quantization_config, resolve_dtype
    from srelib.training.chat_format import use_tool_format

    problem = model_access_problem(model_id)
    if problem:
        raise RuntimeError(problem)
    dtype = resolve_dtype("auto")
    model = AutoModelForCausalLM.from_pretrained(
        model_id, dtype=dtype, device_map={"": 0} if torch.cuda.is_available() else None,
        quantization_config=quantization or quantization_config(load_in_4bit, dtype))
    return model, use_tool_format(AutoTokenizer.from_pretrained(model_id))


def lora_config(rank: int = 16):
    """LoRA adapters of ``rank`` on every linear layer, scaled by ``2 * rank``."""
    require("peft", "srelib.training.lora")
    from peft import LoraConfig

    if not (isinstance(rank, int) and rank >= 1):
        raise ValueError(f"the LoRA rank must be a whole number of at least 1, got {rank!r}")
    return LoraConfig(r=rank, lora_alpha=2 * rank, target_modules="all-linear",
                      task_type="CAUSAL_LM")


def lora_warm_start(model, tokenizer, output_dir, *, rank: int = 16,
                    seeds: Iterable[int] = range(24), pools: Sequence[str] = TRAIN_POOLS,
                    epochs: float = 1.0, learning_rate: float = 2e-4, batch_size: int = 1,
                    gradient_accumulation_steps: int = 4, max_length: int = 8192,
                    **config_overrides):
    """SFT of LoRA adapters of ``rank`` on ``model`` (the base weights stay as they are) over
    the scripted policies' best episodes on ``seeds`` x ``pools`` of the train tasks, each
    episode one conversation prompted with :data:`LORA_PROMPT`; returns the trainer, whose
    ``model`` is the ``PeftModel``. A conversation longer than ``max_length`` tokens loses its
    start; ``config_overrides`` go to ``trl.SFTConfig``."""
    from srelib.policies.llm.tools import tool_definitions
    from srelib.training.sft import sft_train

    rows = agent_rows(seeds, pools, LORA_PROMPT)
    return sft_train(model, tokenizer, rows, output_dir, epochs=epochs,
                     learning_rate=learning_rate, batch_size=batch_size, max_length=max_length,
                     tools=tool_definitions(), conversations=True,
                     max_completion=LORA_PROMPT["max_new_tokens"], peft_config=lora_config(rank),
                     gradient_accumulation_steps=gradient_accumulation_steps, **config_overrides)


def lora_policy(model, tokenizer, name: str):
    """A greedy ``HFTransformersChatPolicy`` over a loaded ``model`` (LoRA-trained or not),
    prompted with :data:`LORA_PROMPT`."""
    from srelib.policies import HFTransformersChatPolicy

    return HFTransformersChatPolicy(model=model, tokenizer=tokenizer, load_in_4bit=False,
                                    temperature=0, name=name, **LORA_PROMPT)
