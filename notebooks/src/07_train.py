# %% [markdown]
# # 07 · Training an agent: SFT, then GRPO, and the scores before and after
#
# This notebook walks through srelib's two training stages on the incidents:
#
# 1. **SFT** (`srelib.training.agent`): a small Gemma-architecture model imitates the scripted
#    reference and heuristic policies on the train tasks, one prompt-completion row per turn.
#    `make agent` (`srelib agent train`) trains it and saves it to a folder the notebooks find.
#    It acts by calling the actions as tools, in the conversation GRPO's rollouts build.
# 2. **Before and after**: the untrained tiny test model and the SFT agent play the same
#    held-out seeds, beside the `null` baseline; their parse-failure rates and score
#    distributions show what imitation bought.
# 3. **GRPO** (`srelib.training.grpo`): TRL's `GRPOTrainer` lets the model play incidents by
#    calling the actions as tools, scores each rollout by its episode score, and logs the
#    reward, the KL to the reference model and the share of turns that were not an action;
#    the trained model then plays the same held-out seeds.
#
# * **On a GPU runtime** the GRPO section trains `MODEL_ID` (by default `gemma-3-1b-it`, gated
#   on the hub: accept its licence and log in) with LoRA adapters from `peft`, unquantised
#   unless `LOAD_IN_4BIT` (nf4 through bitsandbytes).
# * **Without CUDA** (a laptop, CI) everything runs for real at toy sizes: the SFT agent saved by
#   `make agent` (trained here when there is none) and a few GRPO steps from
#   it. The numbers show that the pipeline works, not what training achieves at scale
#   (`bench/bench_grpo.py` runs a longer GRPO and reports its learning curve).

# %% tags=["parameters"]
MODEL_ID = "google/gemma-3-1b-it"  # GRPO's model on a GPU (with LoRA); unused without CUDA
LOAD_IN_4BIT = False               # a 1B model fits unquantised on a T4
LORA_RANK = 16                     # rank of the LoRA adapters on a GPU
SEEDS = [1000, 1001]               # held-out seeds for before/after (the agent trained on 0-23)
TASKS = ["memory_leak", "cascading_failure", "circuit_breaker_noop"]  # or "all"
MAX_STEPS = 12                     # model calls per episode at most
SFT_EPOCHS = 3                     # only when no saved agent is found (as `make agent`)
GRPO_STEPS = 2                     # optimiser steps of GRPO
GRPO_COMPLETION_TOKENS = 1024      # tokens per rollout, tool results included (CPU; 4096 on a GPU)
GRPO_TURNS = 3                     # tool calls per GRPO rollout at most (CPU; 20 on a GPU)

# %% install srelib[hf,train]

# %% [markdown]
# ## Where this runs
#
# The decision is printed, so a reader of the stored outputs knows which models produced them.

# %%
import torch
from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()  # loading bars would make the stored outputs vary
hf_logging.set_verbosity_error()
cuda = torch.cuda.is_available()
if cuda:
    print(f"CUDA on {torch.cuda.get_device_name(0)}: GRPO trains {MODEL_ID} with LoRA.")
else:
    print(f"No CUDA device: the small SFT agent stands in for {MODEL_ID}; "
          "its numbers only show that the pipeline works.")

# %% [markdown]
# ## 1 · SFT: the agent
#
# The agent is trained on the scripted policies' best episodes (score at least 0.9) on seeds
# 0-23 of the train tasks, pools A and C. Each episode is one conversation, as a GRPO rollout
# builds it (the tools, the incident, then each tool call and its result), and every call in it
# is learnt except those too long to write (a patch), so in phase 2 it explores and declares.
# Training for 3 epochs takes about 75 seconds on two CPU cores; this notebook reuses the saved
# agent when there is one, so that its outputs come from the same weights every run.

# %%
import io
import logging
import warnings
from contextlib import contextmanager, redirect_stderr, redirect_stdout

from srelib.training.agent import default_agent_dir, find_agent, train_agent

logging.getLogger("bitsandbytes").setLevel(logging.ERROR)  # its CPU kernels are not needed


@contextmanager
def quietly():
    """Training prints each step's logs (timings included) and the libraries warn about
    deprecations: keep both out of the stored outputs; they stay readable in `console`."""
    global console
    console = io.StringIO()
    with warnings.catch_warnings(), redirect_stdout(console), redirect_stderr(console):
        warnings.simplefilter("ignore")
        yield


agent_dir = find_agent()
if agent_dir:
    print("Using the agent saved by `make agent` (`srelib agent train`): trained for 3 epochs "
          "on the scripted policies' episodes, not retrained here.")
else:
    print(f"No saved agent: training one for {SFT_EPOCHS:g} epoch(s) (`make agent` uses 3).")
    with quietly():
        agent_dir = train_agent(default_agent_dir(), epochs=SFT_EPOCHS)

# %% [markdown]
# ## 2 · Before and after SFT
#
# *Before* is srelib's tiny test model, which was never shown an incident: it writes text that
# is rarely an action. *After* is the SFT agent. Both play the tasks above on held-out seeds in
# pools A (phase 1 alone) and C (both phases), greedily, beside the `null` baseline, which does
# nothing and declares no change.

# %%
import pandas as pd

import srelib
from srelib.policies import HFTransformersChatPolicy
from srelib.tiny_model import TINY_PROMPT_LIMITS, tiny_chat_model
from srelib.training.agent import (TRAIN_POOLS, agent_policy, measure_agent,
                                   parse_failure_rate)

after = measure_agent(agent_policy(agent_dir), seeds=SEEDS, tasks=TASKS, max_steps=MAX_STEPS)
tiny = HFTransformersChatPolicy(tiny_chat_model(), load_in_4bit=False, temperature=0,
                                max_new_tokens=32, name="tiny (untrained)",
                                **TINY_PROMPT_LIMITS)
before = srelib.evaluate({tiny.name: tiny}, tasks=TASKS, pools=list(TRAIN_POOLS), seeds=SEEDS,
                         max_steps=MAX_STEPS, progress=False)
frame = pd.concat([before, after["frame"]], ignore_index=True)
order = [tiny.name, "agent", "null"]
rates = {tiny.name: parse_failure_rate(before), "agent": after["parse_failure_rate"]}
for name, rate in rates.items():
    print(f"{name}: {rate:.0%} of its replies were not a readable action")
print(f"{len(frame)} episodes: {len(TASKS)} tasks x {len(TRAIN_POOLS)} pools x "
      f"{len(SEEDS)} seeds for each of {len(order)} policies")

# %%
from IPython.display import Markdown, display

from srelib.stats import summary_table, to_markdown

display(Markdown(to_markdown(summary_table(frame)[order])))

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
# prompt settings it was trained with; on a GPU from `MODEL_ID` with LoRA.

# %%
import tempfile

from transformers import AutoModelForCausalLM, AutoTokenizer

from srelib.training.chat_format import use_tool_format
from srelib.training.grpo import grpo_train

if cuda:
    from peft import LoraConfig

    from srelib.policies.hf_chat import model_access_problem, quantization_config, resolve_dtype

    problem = model_access_problem(MODEL_ID)  # asks the hub before any download
    if problem:
        raise RuntimeError(problem)
    start = MODEL_ID
    options = {"peft_config": LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK,
                                         target_modules="all-linear", task_type="CAUSAL_LM"),
               "max_completion_length": 256, "max_turns": 20}
    dtype = resolve_dtype("auto")  # bf16 where the GPU computes it natively, else fp32
    model = AutoModelForCausalLM.from_pretrained(
        start, dtype=dtype, quantization_config=quantization_config(LOAD_IN_4BIT, dtype))
else:
    start = agent_dir
    options = {"max_completion_length": GRPO_COMPLETION_TOKENS, "max_turns": GRPO_TURNS}
    model = start  # grpo_train reads the folder's prompt settings
tokenizer = use_tool_format(AutoTokenizer.from_pretrained(start))
with quietly():
    trainer = grpo_train(model, tokenizer, tempfile.mkdtemp(prefix="srelib-grpo-"),
                         steps=GRPO_STEPS, disable_tqdm=True, **options)
print(f"{GRPO_STEPS} GRPO steps from {'the SFT agent' if not cuda else MODEL_ID}, "
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
table.round(3)

# %% [markdown]
# ## 4 · After GRPO
#
# The trained model plays the same held-out seeds as in section 2, greedily, prompted as its
# GRPO rollouts were. A few steps on a CPU barely move a model; `bench/bench_grpo.py` runs
# longer and reports the curve and the scores before and after, on train and held-out tasks.

# %%
from srelib.training.grpo import rollout_prompt

trained = HFTransformersChatPolicy(model=trainer.model, tokenizer=tokenizer, temperature=0,
                                   load_in_4bit=False, name="agent+GRPO", **rollout_prompt(start))
grpo_after = measure_agent(trained, seeds=SEEDS, tasks=TASKS, max_steps=MAX_STEPS)
print(f"agent+GRPO: {grpo_after['parse_failure_rate']:.0%} of its replies were not a readable "
      f"action; {grpo_after['invalid_action_rate']:.0%} were actions the environment refused")
final = pd.concat([after["frame"], grpo_after["frame"].query("policy == 'agent+GRPO'")],
                  ignore_index=True)
display(Markdown(to_markdown(summary_table(final)[["agent", "agent+GRPO", "null"]])))

# %% [markdown]
# **At scale.** On a GPU, raise `GRPO_STEPS` (hundreds) and let each rollout play a whole
# episode (`max_turns` 20); `trainer.model` holds the LoRA adapters, and
# `trainer.save_model(folder)` keeps them.
