# %% [markdown]
# # 07 · Training an agent: SFT, then GRPO, and the scores before and after
#
# This notebook measures a model on the incidents, trains it in srelib's two stages and
# measures it after each:
#
# 1. **Before**: the model before any training on incidents plays held-out seeds of the train
#    tasks beside the `null` baseline.
# 2. **SFT**: the model imitates the scripted reference and heuristic policies on the train
#    tasks, acting by calling the actions as tools, in the conversation GRPO's rollouts build;
#    then it plays the same seeds, and the parse-failure rates and score distributions show
#    what imitation bought.
# 3. **GRPO** (`srelib.training.grpo`): TRL's `GRPOTrainer` lets the model play incidents by
#    calling the actions as tools, scores each rollout by its episode score, and logs the
#    reward, the KL to the reference model and the share of turns that were not an action;
#    the trained model then plays the same held-out seeds.
#
# * **On a GPU runtime** `MODEL_ID` (by default `gemma-3-1b-it`, gated on the hub: accept its
#   licence and log in) trains with LoRA adapters from `peft` (`srelib.training.lora`), first
#   by SFT and then by GRPO on the same adapters, unquantised unless `LOAD_IN_4BIT` (nf4
#   through bitsandbytes). It loads in bf16 on GPUs with native bf16 (compute capability 8.0 or
#   newer: L4, A100, H100, Runpod's usual cards) and in fp32 on a T4, never in fp16. The
#   episodes the trained model plays use `kv_cache="auto"`, which encodes each prompt again on a
#   GPU and keeps the caches on a CPU, and each reply stops at the close of its tool call. What
#   a step of SFT or GRPO costs on a GPU is not measured with this version (no GPU was at hand
#   when it was written): `bench/gpu_check.py` measures the recipe on a GPU machine (README).
#   The GPU defaults give rollouts of up to 4,096 tokens and 20 tool calls.
# * **Without CUDA** (a laptop, CI) everything runs for real at toy sizes: the untrained tiny
#   test model, the small SFT agent saved by `make agent` (`srelib.training.agent`; trained here
#   when there is none) and a few GRPO steps from it. The numbers show that the pipeline works,
#   not what training achieves at scale (`bench/bench_grpo.py` runs a longer GRPO and reports
#   its learning curve).

# %% tags=["parameters"]
MODEL_ID = "google/gemma-3-1b-it"  # trained with LoRA on a GPU; unused without CUDA
LOAD_IN_4BIT = False               # a 1B model fits unquantised on a T4
LORA_RANK = 16                     # rank of the LoRA adapters on a GPU
SFT_SEEDS = 8                      # GPU: LoRA SFT on train seeds 0..SFT_SEEDS-1 (CPU agent: 0-23)
SFT_EPOCHS = 1                     # GPU: epochs of LoRA SFT (a CPU agent trains as `make agent`)
SEEDS = [1000, 1001]               # held-out seeds for before/after (SFT used seeds 0-23 at most)
TASKS = ["memory_leak", "cascading_failure", "circuit_breaker_noop"]  # or "all"
MAX_STEPS = 12                     # model calls per episode at most
GRPO_STEPS = 2                     # optimiser steps of GRPO
GRPO_GENERATIONS = 2               # rollouts per incident, a GRPO group (8 on a GPU, if it fits)
GRPO_COMPLETION_TOKENS = None      # tokens per rollout, tool results in (None: CPU 1024, GPU 4096)
GRPO_TURNS = None                  # tool calls per rollout at most (None: CPU 3, GPU 20)

# %% install srelib[hf,train]

# %% [markdown]
# ## Where this runs
#
# The decision is printed, so a reader of the stored outputs knows which models produced them.

# %%
import io
import logging
import warnings
from contextlib import contextmanager, redirect_stderr, redirect_stdout

import torch
from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()  # loading bars would make the stored outputs vary
hf_logging.set_verbosity_error()
logging.getLogger("bitsandbytes").setLevel(logging.ERROR)  # its CPU kernels are not needed
cuda = torch.cuda.is_available()
GRPO_COMPLETION_TOKENS = GRPO_COMPLETION_TOKENS or (4096 if cuda else 1024)
GRPO_TURNS = GRPO_TURNS or (20 if cuda else 3)
if cuda:
    print(f"CUDA on {torch.cuda.get_device_name(0)}: {MODEL_ID} trains with LoRA adapters of "
          f"rank {LORA_RANK}{' on a 4-bit base' if LOAD_IN_4BIT else ''}.")
else:
    print(f"No CUDA device: the tiny test model and the small SFT agent stand in for {MODEL_ID}; "
          "their numbers only show that the pipeline works.")
print(f"GRPO rollouts: at most {GRPO_TURNS} tool calls and {GRPO_COMPLETION_TOKENS} tokens each.")


@contextmanager
def quietly():
    """Training prints each step's logs (timings included) and the libraries warn about
    deprecations: keep both out of the stored outputs; they stay readable in `console`."""
    global console
    console = io.StringIO()
    with warnings.catch_warnings(), redirect_stdout(console), redirect_stderr(console):
        warnings.simplefilter("ignore")
        yield


# %% [markdown]
# ## 1 · Before training
#
# *Before* is the model before it has seen an incident: on a GPU `MODEL_ID` as published,
# prompted as it will be trained (the actions as tools, in tool turns); on a CPU srelib's tiny
# test model, which writes text that is rarely an action. It plays the tasks above on held-out
# seeds in pools A (phase 1 alone) and C (both phases), greedily. Even the tiny model had a few
# steps of training when it was built, so its rate is not compared byte for byte either.

# %% tags=["nbval-ignore-output"]
import pandas as pd

import srelib
from srelib.policies import HFTransformersChatPolicy
from srelib.training.tiny_model import TINY_PROMPT_LIMITS, tiny_chat_model
from srelib.training.agent import TRAIN_POOLS, parse_failure_rate

if cuda:
    from srelib.training.lora import load_for_training, lora_policy

    model, tokenizer = load_for_training(MODEL_ID, LOAD_IN_4BIT)  # asks the hub first
    untrained = lora_policy(model, tokenizer, f"{MODEL_ID.split('/')[-1]} (untrained)")
else:
    untrained = HFTransformersChatPolicy(tiny_chat_model(), load_in_4bit=False, temperature=0,
                                         max_new_tokens=32, name="tiny (untrained)",
                                         **TINY_PROMPT_LIMITS)
before = srelib.evaluate({untrained.name: untrained}, tasks=TASKS, pools=list(TRAIN_POOLS),
                         seeds=SEEDS, max_steps=MAX_STEPS, progress=False)
print(f"{untrained.name}: {parse_failure_rate(before):.0%} of its replies were not a readable "
      "action")

# %% [markdown]
# ## 2 · SFT, and the scores before and after
#
# The model imitates the scripted policies' best episodes (score at least 0.9) on the train
# tasks, pools A and C. Each episode is one conversation, as a GRPO rollout builds it (the
# tools, the incident, then each tool call and its result), and every call in it is learnt.
#
# * On a GPU, LoRA adapters on `MODEL_ID` learn from seeds `0..SFT_SEEDS-1` (`lora_warm_start`),
#   patches included; the base weights stay as they are. Seeds 0-7 give 128 conversations, 32
#   optimiser steps an epoch at 4 conversations a step.
# * On a CPU it is the small agent of `make agent`: a 361k-parameter model trained on seeds
#   0-23 for 3 epochs (about 75 seconds on two cores). It writes at most 32 tokens, so it
#   learns no patch: in phase 2 it explores and declares. The notebook reuses the saved agent
#   when there is one, so that its outputs come from the same weights every run.
#
# Then the trained model plays the same held-out seeds, beside the `null` baseline, which does
# nothing and declares no change.

# %%
import tempfile

from srelib.training.agent import (agent_policy, default_agent_dir, find_agent, measure_agent,
                                   missing_agent_note, train_agent)

if cuda:
    from srelib.training.lora import lora_warm_start

    with quietly():
        sft = lora_warm_start(model, tokenizer, tempfile.mkdtemp(prefix="srelib-sft-"),
                              rank=LORA_RANK, seeds=range(SFT_SEEDS), epochs=SFT_EPOCHS,
                              logging_steps=1, disable_tqdm=True)
    losses = [h["loss"] for h in sft.state.log_history if "loss" in h]
    print(f"LoRA SFT of {MODEL_ID}: {SFT_EPOCHS:g} epoch(s) on seeds 0-{SFT_SEEDS - 1}, "
          f"loss {losses[0]:.2f} -> {losses[-1]:.2f}")
    model = sft.model  # the base model with its trained adapters
    agent = lora_policy(model, tokenizer, "agent")
else:
    agent_dir = find_agent()
    if agent_dir:
        print("Using the agent saved by `make agent` (`srelib agent train`): trained for 3 "
              "epochs on the scripted policies' episodes, not retrained here.")
    else:
        print(missing_agent_note("training one now, as `make agent` does (3 epochs); to skip "
                                 "the wait, run `srelib agent train` before opening the "
                                 "notebook"))
        with quietly():
            agent_dir = train_agent(default_agent_dir())
    agent = agent_policy(agent_dir)
after = measure_agent(agent, seeds=SEEDS, tasks=TASKS, max_steps=MAX_STEPS)
frame = pd.concat([before, after["frame"]], ignore_index=True)
order = [untrained.name, "agent", "null"]
print(f"{len(frame)} episodes: {frame['task'].nunique()} tasks x {len(TRAIN_POOLS)} pools x "
      f"{len(SEEDS)} seeds for each of {len(order)} policies")

# %% [markdown]
# The scores, with a 95% bootstrap interval over the episodes of each task. A model trained on
# a CPU has slightly different weights on another processor (torch picks its kernels by CPU),
# so the trained models' numbers differ from one machine to the next and nbval does not compare
# this cell (`nbval-ignore-output`). The cell after it checks what they must show instead.

# %% tags=["nbval-ignore-output"]
from IPython.display import Markdown, display

from srelib.analysis.stats import summary_table, to_markdown

print(f"agent: {after['parse_failure_rate']:.0%} of its replies were not a readable action")
display(Markdown(to_markdown(summary_table(frame)[order])))

# %% [markdown]
# **Checked on every run.** What the trained agent's numbers must show (on the CPU it is
# required: a ✗ stops the notebook; on a GPU, for your model, it is reported), then the `null`
# baseline's scores, which are the same on every machine and compared as usual.

# %%
from srelib.training.claims import agent_claims, check

check(agent_claims(frame), required=not cuda)
display(Markdown(to_markdown(summary_table(frame[frame["policy"] == "null"]))))

# %%
%matplotlib inline
from srelib import plots

plots.score_distributions(frame, policies=order, title="Final score before and after SFT")

# %% [markdown]
# ## 3 · GRPO
#
# GRPO plays `num_generations` rollouts of the same incident (a group), rewards each by its
# episode score, and pushes the model towards the rollouts that beat their group's mean, while
# a KL term keeps it near the reference model. The model acts by **calling tools**, so its
# tokenizer must render the action tools and parse tool calls (`use_tool_format`; the agent's
# saved tokenizer already does). On a CPU GRPO starts from the SFT agent's folder, with the
# prompt settings it was trained with; on a GPU it trains the SFT adapters on, and its
# reference model is a frozen copy of them.

# %%
from transformers import AutoTokenizer

from srelib.training.chat_format import use_tool_format
from srelib.training.grpo import grpo_train

if cuda:
    start = model  # the SFT adapters
else:
    start = agent_dir  # grpo_train reads the folder's prompt settings
    tokenizer = use_tool_format(AutoTokenizer.from_pretrained(agent_dir))
with quietly():
    trainer = grpo_train(start, tokenizer, tempfile.mkdtemp(prefix="srelib-grpo-"),
                         steps=GRPO_STEPS, num_generations=GRPO_GENERATIONS,
                         max_completion_length=GRPO_COMPLETION_TOKENS, max_turns=GRPO_TURNS,
                         disable_tqdm=True)
print(f"{GRPO_STEPS} GRPO steps from the SFT agent, "
      f"{trainer.args.num_generations} rollouts per incident")

# %% [markdown]
# TRL logs one row per optimiser step: `reward` is the mean episode score of the step's
# rollouts, `kl` the divergence from the reference model (zero at the first step, before the
# model has moved), and `parse_failure_rate` the share of the model's turns that were not an
# action.

# %%
logged = [h for h in trainer.state.log_history if "reward" in h]
table = pd.DataFrame([{"step": h["step"], "reward": h["reward"], "kl": h["kl"],
                       "parse_failure_rate": h["rewards/parse_failure_rate/mean"]}
                      for h in logged])
print(f"{len(logged)} GRPO steps logged; rewards in [0, 1]: "
      f"{bool(table['reward'].between(0, 1).all())}; parse-failure rates in [0, 1]: "
      f"{bool(table['parse_failure_rate'].between(0, 1).all())}")

# %% tags=["nbval-ignore-output"]
table.round(3)

# %% [markdown]
# ## 4 · After GRPO
#
# The trained model plays the same held-out seeds as in section 2, greedily, prompted as its
# GRPO rollouts were. A few steps on a CPU barely move a model; `bench/bench_grpo.py` runs
# longer and reports the curve and the scores before and after, on train and held-out tasks.

# %%
from srelib.training.grpo import rollout_prompt

if cuda:
    trained = lora_policy(trainer.model, tokenizer, "agent+GRPO")
else:
    trained = HFTransformersChatPolicy(model=trainer.model, tokenizer=tokenizer, temperature=0,
                                       load_in_4bit=False, name="agent+GRPO",
                                       **rollout_prompt(agent_dir))
grpo_after = measure_agent(trained, seeds=SEEDS, tasks=TASKS, max_steps=MAX_STEPS)
final = pd.concat([after["frame"], grpo_after["frame"].query("policy == 'agent+GRPO'")],
                  ignore_index=True)

# %% tags=["nbval-ignore-output"]
print(f"agent+GRPO: {grpo_after['parse_failure_rate']:.0%} of its replies were not a readable "
      f"action; {grpo_after['invalid_action_rate']:.0%} were actions the environment refused")
display(Markdown(to_markdown(summary_table(final)[["agent", "agent+GRPO", "null"]])))

# %% [markdown]
# Checked as in section 2: the claims hold for the model after GRPO too.

# %%
check(agent_claims(final, "agent+GRPO"), required=not cuda)

# %% [markdown]
# **At scale.** On a GPU, raise `GRPO_STEPS` (hundreds), `GRPO_GENERATIONS`, `SFT_SEEDS` and the
# held-out `SEEDS`; `trainer.model` holds the LoRA adapters, and `trainer.save_model(folder)`
# keeps them.
