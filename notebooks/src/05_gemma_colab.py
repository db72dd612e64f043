# %% [markdown]
# # 05 · Gemma on a GPU (Colab or Runpod), against the scripted baselines
#
# This notebook runs a local chat model, by default Google's `gemma-3-1b-it`, through both
# phases of the incidents with `srelib.policies.HFTransformersChatPolicy`, and compares it with
# the scripted baselines of notebook 02 on the very same tasks and seeds. The episodes run in
# **lockstep batches**: `srelib.evaluate` steps every environment of a batch together and asks
# the model for all their next actions in one left-padded `generate` call, which is what makes
# a small GPU worth using. Every reply ends as soon as its JSON action (or tool call) is
# complete, so a step costs the tokens of its action, not `MAX_NEW_TOKENS`.
#
# * **On a GPU runtime** (Colab: *Runtime → Change runtime type → T4 GPU*; Runpod: any CUDA
#   image) the model computes in bf16 where the GPU has it natively (compute capability 8.0 or
#   newer: L4, A100, H100) and in fp32 otherwise (a T4), never in fp16, which overflows in
#   Gemma. Gemma is gated: accept its licence on the Hugging Face hub and log in (on Colab, add
#   an `HF_TOKEN` secret); without access the notebook stops early and says what to do.
# * **Without CUDA** (a laptop, CI) `USE_TINY_MODEL` switches to a small offline model of the
#   same architecture and chat template, so every cell still runs for real: the agent that
#   `make agent` (`srelib agent train`) trains on the scripted policies' episodes when it has
#   been saved, which writes valid actions and plays real episodes, else srelib's tiny test
#   model, whose scores only show that the pipeline works.

# %% tags=["parameters"]
MODEL_ID = "google/gemma-3-1b-it"  # any chat model on the hub, e.g. "google/gemma-3-4b-it"
USE_TINY_MODEL = None              # None: the tiny offline model exactly when there is no CUDA
SEEDS = 2                          # seeds per task, shared by the model and the baselines
TASKS = ["memory_leak", "circuit_breaker_noop"]  # or "all"
MAX_STEPS = 20                     # model calls per episode at most
MAX_NEW_TOKENS = 384               # tokens per reply
BATCH_SIZE = 16                    # episodes per lockstep batch (and per generate call)
LOAD_IN_4BIT = False               # a 1B model fits unquantised; see "Which model runs"
BASELINES = ["null", "random", "heuristic", "heuristic-revert"]  # names from `srelib eval`

# %% install srelib[hf]

# %% [markdown]
# ## Which model runs
#
# The decision is printed, so a reader of the stored outputs knows which model produced them.

# %%
import torch
from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()  # loading bars would make the stored outputs vary
cuda = torch.cuda.is_available()
use_tiny = (not cuda) if USE_TINY_MODEL is None else bool(USE_TINY_MODEL)
agent = None
if use_tiny:
    from srelib.training.agent import find_agent, missing_agent_note

    agent = find_agent()
    why = "no CUDA device was found" if not cuda else "USE_TINY_MODEL is True"
    if agent:
        print(f"Running the small agent saved by `make agent` instead of {MODEL_ID}: {why}. "
              "It learnt the action format from the scripted policies' episodes; run on a "
              "GPU for Gemma's numbers.")
    else:
        print(f"Running the tiny offline test model instead of {MODEL_ID}: {why}. Its scores "
              "only show that the pipeline works; run on a GPU for real numbers.")
        print(missing_agent_note("this run uses the tiny test model instead, so nothing is "
                                 "trained here"))
elif cuda:
    print(f"Running {MODEL_ID} on {torch.cuda.get_device_name(0)}"
          f"{' in 4-bit' if LOAD_IN_4BIT else ''}.")
else:
    print(f"Running {MODEL_ID} on the CPU (USE_TINY_MODEL is False and there is no CUDA): "
          "unquantised and slow.")
if not use_tiny:
    from srelib.policies.llm.providers.hf_chat import model_access_problem

    problem = model_access_problem(MODEL_ID)  # asks the hub before any download
    if problem:
        raise RuntimeError(problem)

# %% [markdown]
# **Why not 4-bit.** Gemma-3-1B has 1.0 billion parameters: 4 GB in fp32 (a T4) or 2 GB in bf16,
# well inside a T4's 15 GB with room for the caches of a full batch. Quantising it to 4 bits
# would save memory nobody needs here, cost some accuracy, and run slower at these batch sizes,
# since bitsandbytes unpacks the weights on every matrix product. Set `LOAD_IN_4BIT = True` for
# a model that does not fit otherwise, such as `gemma-3-4b-it` on a T4 (16 GB in fp32).
#
# **Which path each device gets.** `HFTransformersChatPolicy` chooses from the device it finds,
# and its repr and every usage record say which (`kv_cache=...`, set by `kv_cache="auto"`):
#
# | device | dtype | quantisation | KV caches (`kv_cache="auto"`) |
# |---|---|---|---|
# | CPU (CI, a laptop: the small agent or the tiny model) | fp32 | none | kept between turns: a step encodes only the new observation |
# | Colab T4 (compute capability 7.5) | fp32 (no native bf16; never fp16) | none: a 1B model is 4 GB in fp32 (`LOAD_IN_4BIT` for bigger ones) | every prompt encoded again |
# | Colab L4/A100, Runpod's A100/H100/H200 (8.0 or newer) | bf16 | none | every prompt encoded again |
#
# On a GPU, encoding a few thousand tokens of prompt takes milliseconds, and on an H200 keeping
# the caches measured 2 to 3 times slower than encoding again (GPU issue, before the kept caches
# were rewritten as one buffer per turn), so `auto` encodes again there; pass `kv_cache=True` to
# compare. What an episode costs on each GPU has not been measured with this version: no GPU
# was at hand when it was written, so the figures below are an estimate (`bench/gpu_check.py`
# measures them on a GPU machine, see the README).
#
# **What to expect.** Before anything loads, the next cell states the memory and time this run
# should take on the GPU class it finds (on a CPU: a T4, Colab's free GPU). These figures are
# an **estimate** worked out from the model's shape and the GPU's data sheet
# (`srelib.analysis.estimates`); no GPU measurement stands behind them yet (`bench/gpu_gemma.py` takes
# one). The last section sets the measured peak memory and time beside them.

# %%
import srelib
from srelib.analysis.estimates import GPUS, MODELS, estimate_run, gpu_class

task_count = len(srelib.TASKS) if TASKS == "all" else len(TASKS)
gpu = (gpu_class(torch.cuda.get_device_name(0)) if cuda else None) or GPUS["T4"]
shape = MODELS.get(MODEL_ID)
if shape is None:
    estimate = None
    print(f"No estimate for {MODEL_ID}: srelib.analysis.estimates.MODELS knows {sorted(MODELS)}.")
else:
    # Gemma's tokenizer spends about one token per 3-4 characters of observation text.
    estimate = estimate_run(gpu, shape, episodes=task_count * SEEDS, batch_size=BATCH_SIZE,
                            steps=MAX_STEPS, prompt_tokens=24_000 // 3, turn_tokens=6_000 // 3,
                            new_tokens=MAX_NEW_TOKENS)
    where = gpu.name if cuda else f"{gpu.name} (no GPU here; a T4 is Colab's free one)"
    print(f"ESTIMATE, not a measurement: {MODEL_ID} on a {where} in {estimate['dtype']}, "
          f"{task_count * SEEDS} episodes in lockstep batches of {estimate['lanes']}: about "
          f"{estimate['memory_gib']} GiB of the GPU's {gpu.memory_gib:g} GiB and about "
          f"{estimate['seconds'] / 60:.0f} min at worst ({MAX_NEW_TOKENS} tokens every reply).")
    if not estimate["fits"]:
        print("That does not fit: lower BATCH_SIZE, or set LOAD_IN_4BIT = True.")

# %% [markdown]
# ## Loading the policy
#
# Greedy decoding (`temperature=0`) gives the same replies whether an episode runs alone or in
# a batch, so results do not depend on `BATCH_SIZE`. Gemma's chat template has no system role;
# the policy learns that from the template and folds the system prompt into the first user turn.

# %%
from srelib.policies import HFTransformersChatPolicy
from srelib.training.tiny_model import TINY_PROMPT_LIMITS, tiny_chat_model

if agent:  # its prompt settings are saved beside its weights
    model_name = "agent"
    policy = HFTransformersChatPolicy(agent, load_in_4bit=False, temperature=0,
                                      name=model_name, max_batch_size=BATCH_SIZE)
elif use_tiny:
    model_name = "tiny"
    policy = HFTransformersChatPolicy(tiny_chat_model(), load_in_4bit=False, temperature=0,
                                      max_new_tokens=min(MAX_NEW_TOKENS, 32), name=model_name,
                                      max_batch_size=BATCH_SIZE, **TINY_PROMPT_LIMITS)
else:
    model_name = MODEL_ID.split("/")[-1]
    policy = HFTransformersChatPolicy(MODEL_ID, load_in_4bit=LOAD_IN_4BIT, temperature=0,
                                      max_new_tokens=MAX_NEW_TOKENS, max_batch_size=BATCH_SIZE,
                                      name=model_name)
parameters = sum(p.numel() for p in policy.model.parameters())
print(f"{model_name}: {parameters:,} parameters, weights in {policy.model.dtype}, "
      f"replies of at most {policy.max_new_tokens} tokens")

# %% [markdown]
# ## The runs
#
# The model and the baselines play the same grid: the tasks above in the joint pools (C for the
# training tasks, D for the held-out ones), seeds `0 .. SEEDS-1`. The baselines run without the
# `MAX_STEPS` cap, which only bounds the model's calls. Episodes and trajectories go to a run
# directory, for the failure analysis below.

# %%
import tempfile
import time

import pandas as pd

import srelib
from srelib import scripted_policy
from srelib.results import load_episodes

run_dir = tempfile.mkdtemp(prefix="srelib-gemma-")
grid = {"tasks": TASKS, "pools": ("C", "D"), "seeds": SEEDS, "out": run_dir, "progress": False}
started = time.perf_counter()
model_frame = srelib.evaluate({model_name: policy}, max_steps=MAX_STEPS, batch_size=BATCH_SIZE,
                              **grid)
model_seconds = time.perf_counter() - started
baseline_frame = srelib.evaluate({name: scripted_policy(name) for name in BASELINES}, **grid)
frame = pd.concat([model_frame, baseline_frame], ignore_index=True)
episodes = load_episodes(run_dir)
order = [model_name, *BASELINES]
print(f"{len(model_frame)} {model_name} episodes in lockstep batches of up to {BATCH_SIZE}, "
      f"{len(baseline_frame)} baseline episodes")

# %% [markdown]
# ## Gemma against the baselines
#
# Mean final score per task with a 95% bootstrap interval over seeds, then one point per episode.
# Every number about the model comes from its weights. In CI that is the small agent, trained on
# a CPU, whose weights differ slightly from one processor to another (torch picks its kernels by
# CPU), so nbval does not compare the cells that show them (`nbval-ignore-output`); a check
# says what they must show instead.

# %% tags=["nbval-ignore-output"]
from IPython.display import Markdown, display

from srelib.analysis.stats import summary_table, to_markdown

display(Markdown(to_markdown(summary_table(frame)[order])))

# %% [markdown]
# **Checked on every run.** What the model's numbers must show: required of the small agent
# (a ✗ stops the notebook), reported for Gemma or any other model; then the baselines' scores,
# which are the same on every machine. Few episodes of the model (four by default) make a coarse
# rate, so the bound on unreadable replies is 20% here (notebook 07 holds the agent to 10%).

# %%
from srelib.training.claims import agent_claims, check

check(agent_claims(frame, model_name, max_unreadable=0.20), required=agent is not None)
display(Markdown(to_markdown(summary_table(baseline_frame)[BASELINES])))

# %%
%matplotlib inline
from srelib import plots

plots.score_distributions(frame, policies=order)

# %% [markdown]
# ## Where it fails
#
# **Components lost.** The bars stack each component's weighted contribution, so the gap between
# a bar and the top of the axis is score left on the table; the table names, per policy, the
# component that costs it most.

# %%
plots.component_breakdown(frame, policies=order)

# %% tags=["nbval-ignore-output"]
from srelib.env.grading.score import WEIGHTS

components = frame.groupby("policy")[list(WEIGHTS)].mean().reindex(order)
lost = (1 - components).mul(pd.Series(WEIGHTS))
components["loses most on"] = lost.idxmax(axis=1)
components["weighted loss"] = lost.max(axis=1)
components.round(3)

# %% [markdown]
# **Parse failures.** A reply the parser cannot read costs a step and a small penalty; three in a
# row and the policy gives up, ending the episode. Scripted policies never fail to parse, so
# their bars sit at zero.

# %%
plots.parse_failure_rate(frame, policies=order)

# %% tags=["nbval-ignore-output"]
from collections import Counter

from srelib.env.actions import GIVE_UP, PARSE_ERROR

mine = [e for e in episodes if e.policy == model_name]
reasons = Counter(r["action"]["parameters"].get("reason", "") for e in mine for r in e.steps
                  if r["action"]["action_type"] == PARSE_ERROR)
ended = Counter(e.ended_by for e in mine)
print(f"{model_name}: {sum(reasons.values())} parse-error steps in {len(mine)} episodes; "
      "episodes ended by: " + ", ".join(f"{k} {v}" for k, v in sorted(ended.items())))
top = pd.DataFrame(reasons.most_common(3), columns=["most common reasons", "steps"])
display(Markdown(to_markdown(top, index=False)) if len(top) else Markdown("No parse failures."))

# %% [markdown]
# **One trajectory.** The model's lowest-scoring episode (the first seed among ties), step by
# step: what it did, whether the environment accepted it, and why not.

# %% tags=["nbval-ignore-output"]
def excerpt(episode, rows: int = 12) -> pd.DataFrame:
    """The first ``rows`` steps: phase, action, target, validity, and the parser's or the
    environment's reason when the step failed."""
    lines = []
    for record in episode.steps[:rows]:
        action = record["action"]
        why = (action.get("parameters") or {}).get("reason") or record.get("error") or ""
        lines.append({"step": record["step"], "phase": record["phase"],
                      "action": action["action_type"], "target": action.get("target_service") or "",
                      "valid": record["valid"], "why not": why[:90]})
    return pd.DataFrame(lines)


worst = min(mine, key=lambda e: e.final)  # the first of equals, in the order they ran
print(f"{worst.policy} on {worst.task} (pool {worst.pool}, seed {worst.seed}): final "
      f"{worst.final:.3f}, {len(worst.steps)} steps, ended by {worst.ended_by}")
excerpt(worst)

# %% [markdown]
# ## On a GPU: memory and batch throughput
#
# How much memory the batched run needed and how fast the batches generated, beside the
# estimate printed before loading; and how much of each prompt the kept KV caches spared the
# model from encoding again. The GPU figures need CUDA; without it the cell says so.

# %% tags=["nbval-ignore-output"]
prompt = sum(u["prompt_tokens"] or 0 for u in policy.usage)
encoded = sum(u.get("prefill_tokens", u["prompt_tokens"]) or 0 for u in policy.usage)
print(f"{prompt:,} prompt tokens over {len(policy.usage)} generated replies, of which "
      f"{encoded:,} were encoded and {prompt - encoded:,} came from the kept KV caches")
if not cuda:
    print("Skipped: no CUDA device, so there is no GPU memory or throughput to report.")
else:
    generated = sum(u["completion_tokens"] or 0 for u in policy.usage)
    print(f"measured: peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB; "
          f"{generated:,} tokens generated for {len(model_frame)} episodes in "
          f"{model_seconds:.1f} s ({generated / model_seconds:.0f} tok/s, environments included)")
    if estimate is not None:
        print(f"estimated beforehand: {estimate['memory_gib']} GiB, "
              f"{estimate['seconds']} s at worst")
