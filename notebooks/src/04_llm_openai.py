# %% [markdown]
# # 04 · An LLM behind an OpenAI-compatible endpoint
#
# Hosted APIs, vLLM, Ollama and `transformers serve` all speak the same chat-completions
# protocol, so one policy, `srelib.policies.OpenAIChatPolicy`, drives any of them. This notebook
# runs a model through both phases of the incidents, then looks at what a study needs beyond the
# score: **what the run cost** (tokens, dollars, latency) and **how often the model's replies
# could not be read as actions**, with the parser's reasons.
#
# Point it at a model with the parameters below, or with the standard environment variables
# (on Colab, add them as secrets: the install cell reads `OPENAI_API_KEY` and `OPENAI_BASE_URL`):
#
# | endpoint | settings |
# |---|---|
# | OpenAI (or any hosted API) | `OPENAI_API_KEY` set, `MODEL = "gpt-4o-mini"` |
# | vLLM: `vllm serve google/gemma-3-1b-it` | `BASE_URL = "http://localhost:8000/v1"`, `MODEL` = the served name |
# | Ollama: `ollama serve` | `BASE_URL = "http://localhost:11434/v1"`, `MODEL = "gemma3:1b"` |
# | `transformers serve` | `BASE_URL = "http://localhost:8000/v1"`, `MODEL` = the hub id |
#
# With no key and no endpoint configured, the notebook serves a small offline model with
# `transformers serve` on 127.0.0.1 instead: the agent that `make agent` (`srelib agent train`)
# trains on the scripted policies' episodes when it has been saved, else srelib's tiny test
# model. That is how CI runs it: every cell runs for real, against a real HTTP server; the agent
# writes valid actions and plays real episodes, but neither model's scores say anything about
# real LLMs.

# %% tags=["parameters"]
MODEL = "gpt-4o-mini"          # the model name the endpoint serves
BASE_URL = None                # None: OPENAI_BASE_URL, else the OpenAI API
SEEDS = 2                      # seeds per task
TASKS = ["memory_leak", "cascading_failure", "circuit_breaker_noop"]  # or "all"
MAX_STEPS = 12                 # model calls per episode at most (the env's budget also applies)
MAX_TOKENS = 600               # completion tokens per call
MAX_CONCURRENCY = 4            # calls in flight at once (one per running episode)
PRICE_PER_1K_INPUT = 0.00015   # USD per 1,000 prompt tokens (gpt-4o-mini's list price);
PRICE_PER_1K_OUTPUT = 0.0006   # per 1,000 completion tokens; a local endpoint is never priced

# %% install srelib[llm] fastapi uvicorn

# %%
import os
import sys

if "google.colab" in sys.modules:  # Colab secrets, if you added them
    from google.colab import userdata

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        try:
            os.environ.setdefault(name, userdata.get(name))
        except (userdata.SecretNotFoundError, userdata.NotebookAccessError):
            pass

# %% [markdown]
# ## The endpoint
#
# A configured endpoint is used as is. Otherwise `srelib.training.tiny_model.serve_tiny_model` builds the
# tiny model (once per machine), starts `transformers serve` on a free loopback port and waits
# until it listens. The server lives in an `ExitStack`: the last cell stops it, a failing run
# cell stops it, and so does the kernel shutting down.

# %%
import atexit
import contextlib
from urllib.parse import urlsplit

from srelib.policies.llm.saved import saved_settings
from srelib.training.tiny_model import TINY_PROMPT_LIMITS, serve_tiny_model
from srelib.training.agent import find_agent, missing_agent_note

endpoint = contextlib.ExitStack()
atexit.register(endpoint.close)
configured = bool(BASE_URL or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY"))
if configured:
    served, stand_in = None, None
    base_url, model, api_key = BASE_URL, MODEL, None
    limits, max_tokens = {}, MAX_TOKENS
    print(f"Using the configured endpoint "
          f"({BASE_URL or os.environ.get('OPENAI_BASE_URL') or 'the OpenAI API'}) "
          f"with model {MODEL!r}.")
elif find_agent():
    served = endpoint.enter_context(serve_tiny_model(find_agent()))
    stand_in = "agent"
    base_url, model, api_key = served.base_url, served.model, "no-key-needed"
    limits = saved_settings(served.model)  # the prompt it was trained with
    max_tokens = min(MAX_TOKENS, limits.pop("max_new_tokens"))
    print("No OPENAI_API_KEY, OPENAI_BASE_URL or BASE_URL is set, so this run uses the small "
          f"agent saved by `make agent`, served by `transformers serve` at {served.base_url}.")
    print(f"It learnt the action format from the scripted policies' episodes; its replies are "
          f"capped at {max_tokens} tokens and its prompts use its training settings "
          f"({limits['obs_chars']} characters per observation).")
else:
    served = endpoint.enter_context(serve_tiny_model())
    stand_in = "tiny"
    base_url, model, api_key = served.base_url, served.model, "no-key-needed"
    limits, max_tokens = TINY_PROMPT_LIMITS, min(MAX_TOKENS, 32)
    print("No OPENAI_API_KEY, OPENAI_BASE_URL or BASE_URL is set, so this run uses srelib's tiny "
          f"offline test model, served by `transformers serve` at {served.base_url}.")
    print(f"Its replies are capped at {max_tokens} tokens and its prompts at "
          f"{limits['obs_chars']} characters per observation; its scores only show that the "
          "pipeline works.")
    print(missing_agent_note("this run serves the tiny test model instead, so nothing is "
                             "trained here"))
# a model on this machine (the tiny model, vLLM or Ollama on localhost) has no price per token
host = urlsplit(base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com").hostname
local = served is not None or host in ("localhost", "127.0.0.1", "::1", "0.0.0.0")

# %% [markdown]
# ## The policy
#
# `OpenAIChatPolicy` renders each observation into a chat turn, parses the reply into an action
# (`srelib.parse_action`) and, when it cannot, sends the environment a parse-error action whose
# explanation the model reads on its next turn; after three failures in a row it gives up, which
# ends the episode cleanly. Calls have a timeout and bounded retries, and the key never appears
# in its repr, its actions or its logs. Greedy decoding (`temperature=0`) keeps the run
# repeatable where the endpoint allows it. A model whose chat template has no system role (Gemma)
# gets the system prompt folded into its first user turn; the tiny model is one of those.
# With `tools=True` (the saved agent's settings turn it on: it was trained to call the actions
# as tools) the policy sends the action tools, reads the model's `tool_calls` and keeps the
# conversation in tool turns, each result a `tool` message answering its call, as the agent
# saw it in training.

# %%
from srelib.policies import OpenAIChatPolicy

# A server this notebook started fails the same way on every retry (a greedy model's reply it
# cannot parse is an HTTP 500), so its calls are not retried; a remote endpoint's are.
policy = OpenAIChatPolicy(model, base_url=base_url, api_key=api_key, temperature=0,
                          max_tokens=max_tokens, max_concurrency=MAX_CONCURRENCY, timeout=120,
                          max_retries=0 if served else 3,
                          fold_system=True if served else None, name="llm", **limits)
policy

# %% [markdown]
# ## Running the episodes
#
# Each task runs as one `srelib.evaluate` call in the joint pools (C for the training tasks, D
# for the held-out ones). The policy has `act_batch`, so the task's episodes run in lockstep, up
# to `MAX_CONCURRENCY` calls at once. Every call appends a record to `policy.usage` (prompt and
# completion tokens, latency), so the records added during a task are that task's cost. The
# episodes, trajectories included, go to a run directory for the analysis below. The `null`
# baseline, which does nothing and declares that no change is needed, plays the same grid.
#
# Every number in the cells below comes from the model. In CI that is the small agent, trained
# on a CPU, whose weights differ slightly from one processor to another (torch picks its kernels
# by CPU), so nbval does not compare these cells (`nbval-ignore-output`); the check after the
# run says what the numbers must show instead.

# %% tags=["nbval-ignore-output"]
import tempfile

import pandas as pd

import srelib
from srelib.results import load_episodes

tasks = list(srelib.TASKS) if TASKS == "all" else list(TASKS)
run_dir = tempfile.mkdtemp(prefix="srelib-llm-")
frames, usage = [], []
try:
    for task in tasks:
        mark = len(policy.usage)
        frames.append(srelib.evaluate({"llm": policy}, tasks=[task], pools=("C", "D"),
                                      seeds=SEEDS, max_steps=MAX_STEPS, out=run_dir,
                                      progress=False))
        usage += [{"task": task, **record} for record in policy.usage[mark:]]
except BaseException:
    endpoint.close()
    raise
frame = pd.concat(frames, ignore_index=True)
calls = pd.DataFrame(usage)
episodes = load_episodes(run_dir)
null = srelib.evaluate({"null": srelib.scripted_policy("null")}, tasks=tasks, pools=("C", "D"),
                       seeds=SEEDS, progress=False)
print(f"{len(frame)} episodes over {len(tasks)} tasks, {len(calls)} model calls, "
      f"{int(calls['error'].notna().sum()) if 'error' in calls else 0} failed calls")
(frame.assign(steps=frame["p1_steps"] + frame["p2_steps"]).groupby("task", sort=False)
 .agg(episodes=("seed", "size"), final=("final", "mean"), diagnosis=("diagnosis", "mean"),
      repair=("repair", "mean"), mean_steps=("steps", "mean")).round(3))

# %% [markdown]
# **Checked on every run.** What the model's replies must show: required of the small agent
# (a ✗ stops the notebook), reported for any other model; then the `null` baseline's scores,
# the same on every machine. The bound on unreadable replies is looser than in notebooks 05
# and 07: `transformers serve` refuses the agent's tool calls, so it answers in text here, and
# the server fails a few calls, a varying number from run to run (about 10% of the steps).

# %%
from IPython.display import Markdown, display

from srelib.analysis.stats import summary_table, to_markdown
from srelib.training.claims import agent_claims, check

claims = agent_claims(pd.concat([frame, null], ignore_index=True), "llm", max_unreadable=0.25)
readable = {claim: holds for claim, holds in claims.items() if "readable action" in claim}
check(readable, required=stand_in == "agent")
display(Markdown(to_markdown(summary_table(null))))

# %% [markdown]
# Whether the model scores above `null` on the incidents that need a code fix is reported, not
# required, here: eight paired episodes of the served agent, with a varying share of failed
# calls, put the CI's lower bound near 0, so the small agent's answer moves with the CPU it was
# trained on. Notebooks 05 and 07, which play it in-process on more episodes, require it.

# %% tags=["nbval-ignore-output"]
check({claim: holds for claim, holds in claims.items() if claim not in readable}, required=False)

# %% [markdown]
# ## Cost, tokens and latency
#
# Tokens are what the endpoint reported for each call; cost applies the two prices from the
# parameters (set them to your model's) to a hosted endpoint only: a model served on this
# machine is paid for in hardware, not per token, so its cost reads "local". Latency is the
# wall time of a call, retries included; it depends on the machine and the load, so it is the
# one column that changes from run to run.

# %% tags=["nbval-ignore-output"]
def cost_row(group: pd.DataFrame, episodes: int) -> dict:
    prompt, completion = int(group["prompt_tokens"].fillna(0).sum()), int(
        group["completion_tokens"].fillna(0).sum())
    cost = prompt / 1000 * PRICE_PER_1K_INPUT + completion / 1000 * PRICE_PER_1K_OUTPUT
    return {"episodes": episodes, "calls": len(group), "prompt tokens": prompt,
            "completion tokens": completion, "tokens per call": round((prompt + completion)
                                                                      / max(1, len(group))),
            "cost (USD)": "local" if local else f"{cost:.4f}",
            "cost per episode (USD)": "local" if local else f"{cost / max(1, episodes):.4f}",
            "mean latency per call": f"{group['latency_s'].mean():6.2f} s"}


per_episode_count = frame.groupby("task").size()
costs = pd.DataFrame([{"task": task, **cost_row(group, int(per_episode_count[task]))}
                      for task, group in calls.groupby("task", sort=False)])
costs.loc[len(costs)] = {"task": "all tasks", **cost_row(calls, len(frame))}
display(Markdown(to_markdown(costs, index=False)))

# %% [markdown]
# ## Parse failures
#
# An unreadable reply costs a step of the budget and a small penalty; after three in a row the
# policy gives up instead, which ends the episode. The rate below counts both kinds of step
# (parse error and give-up) over all steps taken, from the stored trajectories.

# %% tags=["nbval-ignore-output"]
from srelib.env.actions import GIVE_UP, PARSE_ERROR

UNREADABLE = (PARSE_ERROR, GIVE_UP)
rates = pd.DataFrame([{"task": e.task, "steps": sum(e.phase_steps),
                       "unreadable": sum(r["action"]["action_type"] in UNREADABLE for r in e.steps),
                       "gave up": e.ended_by == "give_up"} for e in episodes])
rates = rates.groupby("task", sort=False).agg(
    steps=("steps", "sum"), unreadable_replies=("unreadable", "sum"), gave_up=("gave up", "mean"))
rates["unreadable per step"] = (rates["unreadable_replies"] / rates["steps"].clip(lower=1)).round(3)
rates["episodes given up"] = rates.pop("gave_up").map(lambda v: f"{v:.0%}")
rates

# %% [markdown]
# Why the replies failed: the parser's reason for every parse-error step, most common first.
# The reasons are written for the model (it reads them on its next turn), so they also tell you
# what to fix in a prompt or a decoding setting.

# %% tags=["nbval-ignore-output"]
from collections import Counter

reasons = Counter(record["action"]["parameters"].get("reason", "")
                  for episode in episodes for record in episode.steps
                  if record["action"]["action_type"] == PARSE_ERROR)
gave_up = sum(1 for e in episodes for r in e.steps if r["action"]["action_type"] == GIVE_UP)
top = pd.DataFrame(reasons.most_common(5), columns=["reason", "steps"])
print(f"{sum(reasons.values())} parse-error steps, {len(reasons)} distinct reason(s); "
      f"{gave_up} episode(s) ended with a give-up")
display(Markdown(to_markdown(top, index=False)) if len(top) else Markdown("No parse failures."))

# %% [markdown]
# One raw failing reply, exactly as the model wrote it, from the conversations the policy still
# holds (those of the last task's episodes), with what the parser made of it. In tool turns a
# reply the policy read as an action is kept as a tool call, so only text replies can fail:

# %% tags=["nbval-ignore-output"]
from srelib import parse_action

last = len(frames[-1])
replies = [m["content"] for lane in range(last) for m in policy.conversation(lane)
           if m["role"] == "assistant" and not m.get("tool_calls")]
failing = next((r for r in replies if not parse_action(r).ok), None)
if failing is None:
    print("Every reply the policy still holds parses as an action.")
else:
    print("reply: ", repr(failing[:300]))
    print("parser:", parse_action(failing).error)

# %% [markdown]
# Read the rate and the number of distinct reasons together: a capable model fails rarely and
# for varied reasons (a missing parameter, an action that is not valid in this phase), while a
# model that is too small, or whose replies `MAX_TOKENS` cuts off, fails on nearly every step
# for one reason. The fix differs too: the prompt or the parser's hints in the first case, a
# bigger model or a longer reply budget in the second.
#
# ## Stopping the server
#
# The last cell stops a server this notebook started; a configured endpoint is left alone.

# %%
endpoint.close()
print("Stopped the local transformers serve." if served else
      "Nothing to stop: the endpoint was configured outside this notebook.")
