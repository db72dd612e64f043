"""A small agent trained on the environment: SFT on scripted demonstrations, saved to a folder.

:func:`train_agent` plays the reference and heuristic policies on the train tasks, trains a
byte-level BPE tokenizer on the text of those turns (a line that recurs, such as a list of
valid actions or a common action, becomes one token, so a prompt is a few hundred tokens and
an action a handful), builds a small Gemma-architecture model with full attention over its
whole context, fine-tunes it with :func:`srelib.training.sft.sft_train` and saves it, with its
prompt settings (:mod:`srelib.policies.llm.saved`), so that
``HFTransformersChatPolicy(model_id_or_path=folder, load_in_4bit=False)`` prompts it the way it
was trained. By default it acts by tool calls, in the conversation TRL's GRPO rollouts build,
so :func:`srelib.training.grpo.grpo_train` starts from its folder. Turns whose action is too
long for the agent to write (a patch's diff) are not learnt, so in phase 2 it explores and
declares, it does not patch.

:func:`default_agent_dir` is where ``make agent`` saves it and where the notebooks look: a
folder named by :func:`agent_key`, a digest of what made the agent (srelib's code and data, the
training options, the library versions and the CPU kernel level), so an agent saved by another
checkout or on another machine class is never picked up; :func:`find_agent` says whether one
is there.
"""

from __future__ import annotations

import inspect
import json
import os
import time
from pathlib import Path
from typing import Iterable, Sequence

from srelib.extras import require
from srelib.policies.llm.prompts import TOOL_SYSTEM_PROMPT
from srelib.training.sft import COMPACT_SYSTEM_PROMPT

#: How the agent is prompted: short observations, the incident and one previous turn.
AGENT_PROMPT = {"system_prompt": COMPACT_SYSTEM_PROMPT, "obs_chars": 2000, "max_history": 1,
                "max_prompt_chars": 7000, "max_new_tokens": 48}
#: How a tool-calling agent is prompted (``train_agent(tools=True)``): actions as tool calls, in
#: the whole conversation TRL's GRPO rollouts build (a Transcript in tool turns). Its calls
#: are at most 8 tokens and a patch at least 47, so with 32 new tokens no patch is learnt and
#: none is attempted half-written.
TOOL_AGENT_PROMPT = {"system_prompt": TOOL_SYSTEM_PROMPT, "obs_chars": 1200, "max_history": 40,
                     "max_prompt_chars": 24000, "max_new_tokens": 32, "tools": True}
#: Pools the demonstrations come from: phase 1 alone, and both phases.
TRAIN_POOLS = ("A", "C")
#: Only episodes that scored this well are imitated: a small model copies a confused
#: demonstration as readily as a good one. Since diagnosis needs its evidence viewed (issue 28)
#: few heuristic episodes reach 0.9; at 0.9 the agent imitated the reference's transitions
#: almost alone and wrote 11-14% of them malformed, at 0.7 none (measured on held-out seeds).
MIN_SCORE = 0.7


#: Where agents are kept, one folder per :func:`agent_key` (``SRELIB_AGENT_HOME`` overrides it).
AGENT_HOME = Path.home() / ".cache" / "srelib" / "agents"
#: The record of what made an agent, saved in its folder.
PROVENANCE_FILE = "srelib_provenance.json"


#: How long training the agent takes, as measured for the README's benchmark table
#: (``/usr/bin/time -v make agent``: 24 seeds, 3 epochs, on the 2-core machine).
TRAINING_TIME = "about 75 seconds on two CPU cores"


def missing_agent_note(instead: str) -> str:
    """What a notebook says on a machine with no saved agent.

    Args:
        instead: what the notebook does without it (e.g. "this run uses the tiny test model").

    Returns:
        One paragraph: that no agent is saved, how long training one takes, where it is kept
        (so only a first run trains), and how to train it or do without.
    """
    return (f"No saved agent in {default_agent_dir()}: {instead}. Training one "
            f"(`srelib agent train`, or `make agent` in a checkout) takes {TRAINING_TIME}; it "
            "is saved there and reused by every later run, so only a first run pays for it.")


def training_options(**given) -> dict:
    """:func:`train_agent`'s keyword options, its defaults filled in, as JSON values."""
    defaults = {name: p.default for name, p in inspect.signature(train_agent).parameters.items()
                if p.kind is p.KEYWORD_ONLY and name != "log"}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(f"unknown training options {unknown}; valid: {sorted(defaults)}")
    options = {**defaults, **given}
    return {name: list(value) if isinstance(value, (range, tuple, list)) else value
            for name, value in options.items()}


def agent_record(**options) -> dict:
    """What makes the agent :func:`train_agent` trains with ``options`` on this machine:
    srelib's files (the code and data that play the demonstrations and train on them), the
    options, and :func:`~srelib.results.provenance.machine_class` (CPU kernel level, torch and
    transformers versions), since each of them changes the weights."""
    from srelib.results.provenance import machine_class, source_digest

    return {"source": source_digest(), "options": training_options(**options),
            **machine_class()}


def agent_key(**options) -> str:
    """The short digest of :func:`agent_record` that names the agent's folder."""
    from srelib.results.provenance import digest

    return digest(agent_record(**options))


def default_agent_dir(**options) -> Path:
    """``$SRELIB_AGENT_HOME/agent-KEY`` (default home :data:`AGENT_HOME`), ``KEY`` being
    :func:`agent_key` of ``options``: where ``make agent`` saves the agent of this checkout
    and machine class, and where the notebooks look for it."""
    home = Path(os.environ.get("SRELIB_AGENT_HOME") or AGENT_HOME)
    return home / f"agent-{agent_key(**options)}"


def find_agent(path: str | os.PathLike | None = None) -> str | None:
    """The folder of a saved agent at ``path`` (default :func:`default_agent_dir`), or None."""
    from srelib.policies.llm.saved import SETTINGS_FILE

    folder = Path(path) if path is not None else default_agent_dir()
    needed = ("config.json", "tokenizer.json", SETTINGS_FILE)
    return str(folder) if all((folder / name).is_file() for name in needed) else None


def transcript_options(settings: dict) -> dict:
    """The :class:`~srelib.policies.llm.prompts.Transcript` options for chat-policy ``settings``."""
    return {"system": settings["system_prompt"], "obs_chars": settings["obs_chars"],
            "max_history": settings["max_history"], "max_chars": settings["max_prompt_chars"],
            "tool_turns": bool(settings.get("tools"))}


def agent_tokenizer(rows: Sequence[dict], vocab_size: int = 4096, tools: list | None = None):
    """A byte-level BPE tokenizer trained on the lines of ``rows``' messages (tool calls as the
    tool chat format writes them, and with ``tools`` that format's tool lines), with Gemma-style
    turn markers; with ``tools`` it renders tools and reads tool calls
    (:mod:`srelib.training.chat_format`). Merges may cross spaces and punctuation but not line
    ends, so a recurring line is one token."""
    require("tokenizers", "srelib.training.agent")
    from tokenizers import pre_tokenizers

    from srelib.training.tiny_model import chat_tokenizer
    from srelib.training.chat_format import use_tool_format

    def build(lines, size):
        return chat_tokenizer(lines, size, pre_tokenizers.Sequence([
            pre_tokenizers.Split("\n", "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]))

    renderer = use_tool_format(build(["-"], 300)) if tools else None

    def texts():
        for row in rows:
            for message in row["prompt"] + row["completion"]:
                yield message["content"]
                if message.get("tool_calls"):  # the call as the template writes it
                    yield renderer.apply_chat_template([message], tokenize=False)
        if tools:
            yield renderer.apply_chat_template([{"role": "user", "content": ""}], tools=tools,
                                               tokenize=False)

    tokenizer = build((line for text in texts() for line in text.split("\n")), vocab_size)
    return use_tool_format(tokenizer) if tools else tokenizer


def agent_model(tokenizer, *, hidden_size: int = 64, layers: int = 2, context: int = 1024,
                seed: int = 0):
    """A fresh Gemma3 causal LM for ``tokenizer``: ``layers`` layers of full attention over
    ``context`` positions, head_dim 32, greedy decoding that stops at the end of a turn."""
    require("torch", "srelib.training.agent")
    import torch
    require("transformers", "srelib.training.agent")
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    from srelib.training.tiny_model import END_OF_TURN

    torch.manual_seed(seed)
    stops = [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids(END_OF_TURN)]
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=3 * hidden_size,
        num_hidden_layers=layers, num_attention_heads=hidden_size // 32, num_key_value_heads=1,
        head_dim=32, query_pre_attn_scalar=32, max_position_embeddings=context,
        sliding_window=context,
        layer_types=["full_attention"] * layers, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=stops, tie_word_embeddings=True)
    model = Gemma3ForCausalLM(config)
    model.generation_config.eos_token_id = stops
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.do_sample = False
    return model


def agent_rows(seeds: Iterable[int] = range(24), pools: Sequence[str] = TRAIN_POOLS,
               settings: dict | None = None, min_score: float = MIN_SCORE) -> list[dict]:
    """Prompt-completion rows of the reference and heuristic policies on the train tasks, from
    their episodes that scored at least ``min_score``."""
    from srelib.training.sft import demonstrations

    return demonstrations(seeds=seeds, tasks="all", pools=pools, min_score=min_score,
                          prompt=transcript_options(settings or AGENT_PROMPT))


def train_agent(out: str | os.PathLike | None = None, *, seeds: Iterable[int] = range(24),
                pools: Sequence[str] = TRAIN_POOLS, epochs: float = 3.0, tools: bool = True,
                learning_rate: float = 5e-3, batch_size: int = 4, vocab_size: int = 4096,
                hidden_size: int = 64, layers: int = 2, max_length: int | None = None,
                seed: int = 0, log=print) -> str:
    """Train the agent on demonstrations from ``seeds`` x ``pools`` and save it under ``out``
    (default :func:`default_agent_dir`); returns the folder. A turn longer than ``max_length``
    tokens (default 512, with ``tools`` 2048) loses the start of its prompt; batches group
    turns of similar length. With ``tools``
    the agent answers with tool calls, prompted with :data:`TOOL_AGENT_PROMPT` (the
    conversation of a GRPO rollout, so :func:`srelib.training.grpo.grpo_train` can start from
    it), and each episode is learnt as one conversation; else with JSON text, prompted with
    :data:`AGENT_PROMPT`. ``log`` gets progress lines."""
    options = training_options(**{name: value for name, value in locals().items()
                                  if name not in ("out", "log")})
    import tempfile

    from srelib.policies.llm.tools import tool_definitions
    from srelib.results.provenance import data_digest, digest
    from srelib.training.sft import sft_train

    started = time.perf_counter()
    record = agent_record(**options)
    key = digest(record)
    target = Path(out) if out is not None else default_agent_dir(**options)
    settings = dict(TOOL_AGENT_PROMPT if tools else AGENT_PROMPT)
    rows = agent_rows(seeds, pools, settings)
    provenance = {**record, "key": key, "data": data_digest(rows)}
    tool_list = tool_definitions() if tools else None
    tokenizer = agent_tokenizer(rows, vocab_size, tool_list)
    log(f"{len(rows)} demonstration turns (an action longer than {settings['max_new_tokens']} "
        f"tokens, a patch, is not learnt); tokenizer of {len(tokenizer)} tokens")
    model = agent_model(tokenizer, hidden_size=hidden_size, layers=layers, seed=seed,
                        context=2048 if tools else 1024)
    with tempfile.TemporaryDirectory(prefix="srelib-agent-") as scratch:
        trainer = sft_train(model, tokenizer, rows, scratch, epochs=epochs,
                            learning_rate=learning_rate, batch_size=batch_size,
                            max_length=max_length or (2048 if tools else 512), tools=tool_list,
                            conversations=tools, max_completion=settings["max_new_tokens"],
                            seed=seed, disable_tqdm=True,
                            logging_steps=10, train_sampling_strategy="group_by_length")
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    save_agent(target, trainer.model, tokenizer, settings, provenance)
    loss = (f"loss {losses[0]:.2f} -> {losses[-1]:.2f}" if losses  # fewer steps than a log
            else f"mean loss {trainer.state.log_history[-1]['train_loss']:.2f}")
    log(f"trained {sum(p.numel() for p in model.parameters()):,} parameters for {epochs:g} "
        f"epochs in {time.perf_counter() - started:.0f} s ({loss}); saved to {target}")
    return str(target)


def save_agent(folder: str | os.PathLike, model, tokenizer, settings: dict,
               provenance: dict | None = None) -> str:
    """Save ``model``, ``tokenizer``, their prompt ``settings`` and the ``provenance`` record
    (:data:`PROVENANCE_FILE`) to ``folder``, where :func:`agent_policy` and :func:`find_agent`
    read them; returns the folder. A new folder appears whole or not at all, so an interrupted
    save never leaves an agent that :func:`find_agent` would take."""
    from srelib.policies.llm.saved import save_settings
    from srelib.results.saving import save_folder

    def write(scratch: Path) -> None:
        tokenizer.save_pretrained(scratch)
        model.save_pretrained(scratch)
        save_settings(scratch, settings)
        if provenance is not None:
            (scratch / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1, sort_keys=True))

    save_folder(folder, write)
    return str(folder)


#: Seeds the agent never trained on, for measuring it on the train tasks.
HELD_OUT_SEEDS = tuple(range(1000, 1004))


def agent_policy(folder: str | os.PathLike, name: str = "agent", **options):
    """``HFTransformersChatPolicy`` over the agent in ``folder``: greedy, unquantised, with
    the folder's prompt settings (``options`` override them)."""
    from srelib.policies import HFTransformersChatPolicy

    return HFTransformersChatPolicy(str(folder), load_in_4bit=False, temperature=0, name=name,
                                    **options)


def parse_failure_rate(frame) -> float:
    """Unreadable replies per model call in a results frame: parse errors plus the give-up
    that ends a run of them, over every step the policy took."""
    steps = int((frame["p1_steps"] + frame["p2_steps"]).sum())
    failures = int(frame["parse_failures"].sum() + (frame["ended_by"] == "give_up").sum())
    return failures / max(1, steps)


def invalid_action_rate(episodes) -> float:
    """Readable actions the environment refused (not valid now, bad parameters), per step."""
    from srelib.env.actions import PARSE_ERROR

    records = [r for e in episodes for r in e.steps if int(r.get("step") or 0) > 0]
    invalid = sum(1 for r in records if not r.get("valid")
                  and (r.get("action") or {}).get("action_type") != PARSE_ERROR)
    return invalid / max(1, len(records))


def measure_agent(policy, *, seeds: Iterable[int] = HELD_OUT_SEEDS,
                  pools: Sequence[str] = TRAIN_POOLS, tasks: str | Sequence[str] = "all",
                  max_steps: int = 20, baseline: str = "null") -> dict:
    """Play ``policy`` (a chat policy, e.g. :func:`agent_policy`) and the scripted
    ``baseline`` on ``tasks`` x ``pools`` x ``seeds``; returns ``frame`` (one row per
    episode), the policy's ``parse_failure_rate`` and ``invalid_action_rate``, and ``scores``:
    the mean final score of each with a bootstrap CI, and the policy's paired difference from
    the baseline."""
    import tempfile

    require("pandas", "srelib.training.agent")
    import pandas as pd

    from srelib.policies.registry import scripted_policy
    from srelib.results.store import load_episodes
    from srelib.runners.rollout import evaluate
    from srelib.analysis.stats import bootstrap_ci, paired_difference

    grid = {"tasks": tasks, "pools": list(pools), "seeds": list(seeds), "progress": False}
    with tempfile.TemporaryDirectory(prefix="srelib-measure-") as out:
        played = evaluate({policy.name: policy}, max_steps=max_steps, out=out, **grid)
        invalid = invalid_action_rate(load_episodes(out))
    frame = pd.concat([played, evaluate({baseline: scripted_policy(baseline)}, **grid)],
                      ignore_index=True)
    mine = frame[frame["policy"] == policy.name]
    scores = pd.DataFrame(
        [dict(zip(("policy", "mean", "ci_low", "ci_high"),
                  (name, *bootstrap_ci(frame.loc[frame["policy"] == name, "final"]))))
         for name in (policy.name, baseline)])
    difference = paired_difference(frame, policy.name, baseline).iloc[-1]
    scores.loc[len(scores)] = [f"{policy.name} - {baseline} (paired)", difference["mean_diff"],
                               difference["ci_low"], difference["ci_high"]]
    return {"frame": frame, "parse_failure_rate": parse_failure_rate(mine),
            "invalid_action_rate": invalid, "scores": scores}
