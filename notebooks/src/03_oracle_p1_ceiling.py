# %% [markdown]
# # 03 · The oracle-P1 ceiling
#
# Phase 2 starts from whatever phase 1 handed over. So when a phase-2 agent fails, is it bad at
# code, or was it sent to the wrong place? The oracle-P1 ceiling answers this by running the
# *same* phase-2 policy after three handoffs:
#
# * **oracle**: the ground-truth belief (pool B; held-out tasks through `mode="p2_only"`);
# * **null**: `NullPhase1Policy`'s empty belief, in a joint episode (pools C and D);
# * **heuristic**: `HeuristicPhase1Policy`'s own belief, in a joint episode.
#
# The **gap** `repair(oracle) - repair(handoff)`, paired on seeds, is the repair a handoff costs.
# And `r_cross = max(0, repair - null repair)` is the repair that phase-1 context *adds* over an
# empty handoff, once the null handoff's repair has been calibrated per task.
#
# The phase-2 policies: `AimedRepairPhase2Policy`, a repair that turns context into an edit (it
# reads only its observations: with a suspect commit it undoes that commit's edit blocks; with
# the bad files named it undoes the commit's changes line by line there, keeping signatures and
# new names; with the bad functions named it restores deleted lines inside them and hands
# resources back on their error paths; with an empty handoff it searches the git log itself),
# `PartialRevertPhase2Policy` (undoes the suspect's edits to existing code, keeps the code it
# adds) and `RevertPhase2Policy` (a blind revert); the saved agent, where one exists (`make
# agent`), climbs the ladder. Then the **repair ladder** gives the aimed repair one more piece of the answer per
# rung, on the classic suite and both generated splits, and the **localisation** columns show
# how close each episode came to the fault, even when nothing was repaired.

# %% tags=["parameters"]
SEEDS = 8                                              # seeds per task and handoff
TASKS = "all"                                          # "all" or a list of task names
PHASE2 = ["AimedRepairPhase2Policy", "PartialRevertPhase2Policy", "RevertPhase2Policy"]  # phase 2
PHASE1 = {"heuristic": "HeuristicPhase1Policy"}        # own-handoff phase-1 policies
WORKERS = 1                                            # processes for the episodes
GENERATED_TASKS = 12                                   # ladder: tasks per generated split (None: all)

# %% install srelib

# %% [markdown]
# ## Calibrating r_cross: what does each phase-2 policy repair with no context?
#
# `srelib.measure_null_context(policy)` runs the phase-2 policy after the empty handoff, in joint
# episodes, and returns its mean repair per task. That is the baseline r_cross subtracts: a
# policy that repairs a task *without* any context earns no cross-phase credit for repairing it
# *with* context.

# %%
import functools

import pandas as pd
from IPython.display import Markdown, display

import srelib
from srelib import build_policy
from srelib.analysis.stats import to_markdown

from srelib.training.agent import agent_policy, find_agent

phase2 = {name: functools.partial(build_policy, name) for name in PHASE2}
AGENT = find_agent()  # the saved agent of `make agent`, or None: it climbs the ladder below
print(f"saved agent: {AGENT or 'none (run make agent to add it)'}")
phase1 = {label: functools.partial(build_policy, name) for label, name in PHASE1.items()}
null_repair = {name: srelib.measure_null_context(factory, tasks=TASKS, seeds=SEEDS, workers=WORKERS)
               for name, factory in phase2.items()}
calibration = pd.DataFrame(null_repair).reindex([t for t in srelib.TASKS if t in null_repair[PHASE2[0]]])
calibration.index.name = "task"
display(Markdown("Null-handoff repair per task (the r_cross baseline):\n\n" + to_markdown(calibration)))

# %% [markdown]
# ## The three handoffs
#
# `srelib.analysis.ceiling.ceiling_episodes` runs every handoff for one phase-2 policy; passing the
# calibration as `null_repair` makes every episode carry its `r_cross`. `summarize_ceiling`
# turns the episodes into mean repair per task and handoff, with bootstrap CIs, and the paired gap
# to the oracle handoff.

# %%
from srelib.analysis.ceiling import ceiling_episodes, summarize_ceiling

runs, tables = [], []
for name, factory in phase2.items():
    episodes = ceiling_episodes(factory, phase1, tasks=TASKS, seeds=SEEDS, workers=WORKERS,
                                null_repair=null_repair[name])
    runs.append(episodes.assign(phase2=name))
    tables.append(summarize_ceiling(episodes).assign(phase2=name))
episodes = pd.concat(runs, ignore_index=True)
ceiling = pd.concat(tables, ignore_index=True)
print(f"{len(episodes)} episodes: {len(PHASE2)} phase-2 policies x "
      f"{episodes['policy'].nunique()} handoffs x {episodes['task'].nunique()} tasks x {SEEDS} seeds")

# %% [markdown]
# Mean repair under each handoff, over all tasks:

# %%
overall = episodes.pivot_table(index="phase2", columns="policy", values=["repair", "r_cross"],
                               aggfunc="mean").reindex(PHASE2)
overall = overall.reindex(columns=[(v, h) for v in ("repair", "r_cross")
                                   for h in ["oracle", "null", *PHASE1] if (v, h) in overall.columns])
overall.columns = [f"{v} ({h})" for v, h in overall.columns]
overall.round(3)

# %% [markdown]
# A consistency check: the null handoff's repair inside the ceiling run is the calibration itself
# (same policy, tasks and seeds), so its r_cross is zero by construction.

# %%
null_rows = ceiling[ceiling["handoff"] == "null"].set_index(["phase2", "task"])["repair"]
expected = pd.Series({(p, t): v for p, per_task in null_repair.items() for t, v in per_task.items()})
mismatch = (null_rows - expected.reindex(null_rows.index)).abs().max()
print(f"largest difference between the two null measurements: {mismatch:.2e}; "
      f"null r_cross max: {episodes.loc[episodes['policy'] == 'null', 'r_cross'].max():.2f}")

# %% [markdown]
# ## Does better context buy the aimed repair anything?
#
# The classic tasks are few; the generated splits are where the question can be answered. The
# aimed repair runs after the oracle and the null handoff on `GENERATED_TASKS` evenly spaced
# tasks of each generated split (one seed), and on the classic tasks above;
# `srelib.analysis.ceiling.handoff_gain` pairs the two handoffs on task and seed and gives the
# mean gain with a bootstrap 95% CI, per suite and split.

# %%
from srelib.analysis.ceiling import handoff_gain
from srelib.env.tasks.catalog import SPLITS

AIMED = phase2["AimedRepairPhase2Policy"]
sampled = []
for split in SPLITS:
    names = srelib.list_tasks("generated", split)
    step = max(1, len(names) // GENERATED_TASKS) if GENERATED_TASKS else 1
    sampled += names[::step][:GENERATED_TASKS or None]
aimed_runs = pd.concat([episodes[episodes["phase2"] == "AimedRepairPhase2Policy"],
                        ceiling_episodes(AIMED, None, tasks=sampled, seeds=1, workers=WORKERS)],
                       ignore_index=True)
display(Markdown(to_markdown(handoff_gain(aimed_runs).round(3), index=False)))

# %% [markdown]
# Measured on every task (`python bench/bench_ceiling.py --seeds 4 --step 1`, classic 4 seeds,
# generated 1): the oracle handoff's gain over the null one is +0.224 [0.177, 0.271] on the
# generated train split (repair 0.244 against 0.020) and +0.221 [0.175, 0.271] on the
# generated held-out split (0.241 against 0.020). With no suspect named, the repairer's own
# search of the repository finds almost nothing (0.020 on train, against 0.126 before the
# histories gained innocent commits in the bad commit's shapes). On the classic
# tasks the two handoffs tie (train 0.125 each, held-out 0 each): the classic bugs are code to
# be written, which no handoff turns into a revert.

# %% [markdown]
# ## The ceiling-gap plots
#
# Left: repair under each handoff. Right: the gap to the oracle handoff, with its paired bootstrap
# CI. A bar above zero on the right is repair the handoff lost; a bar near zero means this
# phase-2 policy does as well after that handoff as after a perfect one.

# %%
%matplotlib inline
from srelib import plots

figures = {name: plots.ceiling_gap(ceiling[ceiling["phase2"] == name].drop(columns="phase2"),
                                   phase2=name)
           for name in PHASE2}
for fig in figures.values():
    display(fig)

# %% [markdown]
# ## Per task: what the gaps mean
#
# Each task, for each phase-2 policy, falls in one of four cases, read off the table below:
#
# * **phase 2 is the bottleneck**: even the oracle handoff gives (almost) no repair, so a better
#   phase 1 cannot help this policy;
# * **the phase-1 handoff costs repair**: a phase-1 policy's own belief (here the heuristic's)
#   leaves a gap to oracle, so phase 1 is what holds the episode back;
# * **context matters and the phase-1 handoff delivers it**: the empty handoff leaves a gap but
#   the phase-1 policy's does not;
# * **context does not matter**: repair is the same with or without a good handoff (the policy
#   finds the fix from the code alone, or a no-change task rewards the same answer either way).
#
# A gap counts when its 95% CI lies above zero; "almost no repair" is below `FLOOR`.

# %%
FLOOR = 0.05


def case(rows: pd.DataFrame) -> str:
    """Which of the four cases one task's ceiling rows (one per handoff) fall in."""
    by = rows.set_index("handoff")
    if by.loc["oracle", "repair"] < FLOOR:
        return "phase 2 is the bottleneck"
    lost = {h: by.loc[h, "gap_low"] > 0 for h in by.index if h != "oracle"}
    if any(lost[h] for h in PHASE1):
        return "the phase-1 handoff costs repair"
    if lost.get("null"):
        return "context matters and the phase-1 handoff delivers it"
    return "context does not matter"


gap_columns = {f"gap ({h})": h for h in ["null", *PHASE1]}
rows = []
for (name, task), group in ceiling.groupby(["phase2", "task"], sort=False):
    by = group.set_index("handoff")
    row = {"phase-2 policy": name, "task": task, "oracle repair": by.loc["oracle", "repair"]}
    row.update({col: by.loc[h, "gap"] for col, h in gap_columns.items()})
    cross = episodes[(episodes["phase2"] == name) & (episodes["task"] == task)]
    row.update({f"r_cross ({h})": cross.loc[cross["policy"] == h, "r_cross"].mean()
                for h in ["oracle", *PHASE1]})
    row["case"] = case(group)
    rows.append(row)
per_task = pd.DataFrame(rows)
display(Markdown(to_markdown(per_task, index=False)))

# %% [markdown]
# The same cases, listed per phase-2 policy (computed from the table above):

# %%
lines = []
for name in PHASE2:
    mine = per_task[per_task["phase-2 policy"] == name]
    gaps = ", ".join(f"after the {h} handoff {mine[f'gap ({h})'].mean():+.2f}"
                     for h in ["null", *PHASE1])
    lines.append(f"**{name}** (mean oracle repair {mine['oracle repair'].mean():.2f}; "
                 f"mean gap {gaps}):")
    for label, tasks in mine.groupby("case", sort=True)["task"]:
        lines.append(f"* {label}: {', '.join(tasks)}")
    lines.append("")
display(Markdown("\n".join(lines)))

# %% [markdown]
# ## The repair ladder, on both suites
#
# The per-task ceiling above is zero wherever a revert cannot repair, so it cannot tell *why*
# phase 2 fails. The ladder can: `AimedLadderPhase2Policy` is the aimed repair given one more
# piece of the answer per rung, each after the oracle handoff: the oracle belief alone (the
# no-answer baseline), + the bad commit, + the bad file (its file aim), + the bad function (its
# function aim), + the reference patch. (`repairer="partial_revert"` climbs the old ladder of
# the partial revert, which the bad file and function barely move.) Next to the rungs sit real policies: phase-2 policies after the same oracle handoff
# (`oracle handoff`) and joint policies that play both phases (`joint`: pool C for train tasks,
# pool D for held-out ones). The classic suite runs `SEEDS` seeds per task; each generated split
# (train and held-out) runs `GENERATED_TASKS` evenly spaced tasks, one seed each.

# %%
from srelib.analysis.ceiling import sampled_ladder, suite_ladder, summarize_ladder
from srelib.policies.registry import scripted_policy

ladder_real = {"random": functools.partial(build_policy, "RandomPhase2Policy"),
               "revert": functools.partial(build_policy, "RevertPhase2Policy"),
               "partial-revert": functools.partial(build_policy, "PartialRevertPhase2Policy"),
               "aimed-repair": AIMED}
ladder_episodes = suite_ladder(
    SEEDS, GENERATED_TASKS, workers=WORKERS, repairer="aimed", real=ladder_real,
    joint={name: scripted_policy(name) for name in ("heuristic-revert", "heuristic-partial-revert",
                                                    "heuristic-aimed-repair")})
if AGENT:  # the saved CPU agent is slow: one seed per classic task, 3 tasks per generated split
    ladder_episodes = pd.concat([ladder_episodes, sampled_ladder(
        {"agent": functools.partial(agent_policy, AGENT)}, repairer="aimed", workers=WORKERS)],
        ignore_index=True)
ladder = summarize_ladder(ladder_episodes)
shown = ladder[["suite", "policy", "kind", "n", "full", "full_low", "full_high", "repair",
                "commit_diffed", "bad_file_edited"]]
display(Markdown(to_markdown(shown.round(2), index=False)))

# %% [markdown]
# Grey bars are the rungs (share repaired in full, bootstrap 95% CI); each real policy is a
# line at its own share, so its place on the ladder reads off directly. A flat run of rungs
# means that piece of knowledge buys the repair nothing: the step to the last rung is the code
# that has to be written.
#
# Measured on every task (`python bench/bench_ceiling.py --seeds 4 --step 1`, share repaired
# in full per rung belief / commit / file / function): generated train 0.244 / 0.244 / 0.241 /
# 0.311 (the partial revert's ladder: 0.244 on every rung), classic train 0.125 /
# 0.125 / 0.250 / 0.250 (the partial revert's: 0.125 flat). The held-out rows say what generalises:
# generated held-out 0.241 / 0.241 / 0.172 / 0.241, so the line-level undo of a whole file
# *loses* repair on the held-out shapes (it breaks their PASS_TO_PASS tests) and only the
# function aim wins it back, to where the partial revert already was (0.241);
# classic held-out stays 0 on every rung below the patch. The bad commit buys nothing on any
# suite: the oracle handoff's suspect already is the bad commit.

# %%
display(plots.repair_ladder(ladder))

# %% [markdown]
# The no-answer baseline's share repaired in full (the `belief` rung), per suite:

# %%
baseline = ladder[ladder["policy"] == "rung:belief"]
display(Markdown("\n".join(
    f"* {row.suite}: {row.full:.2f} [{row.full_low:.2f}, {row.full_high:.2f}] of {row.n} episodes"
    for row in baseline.itertuples())))

# %% [markdown]
# ## Localisation against score
#
# Two agents that both fail to repair are not equal: one may have read the bad file and edited
# the right function, the other may never have opened the repository. Every results frame
# carries localisation columns (`srelib.results.localisation`: the culprit's rank among the services
# checked, steps and minutes until it was checked, evidence coverage; bad commit diffed, bad
# file read and edited, bad function edited, files read before the patch). They are analysis
# columns and never enter the reward. One point per episode, one colour per policy, against
# the repair score (comparable between oracle-handoff and joint episodes; `srelib demo` draws
# the same against the final score of the joint baselines, `results/localisation.png`):

# %%
located = ladder_episodes[~ladder_episodes["policy"].str.startswith("rung:")
                          | ladder_episodes["policy"].isin(["rung:belief", "rung:patch"])]
display(plots.localisation_vs_score(located, value="repair"))
columns = ["culprit_rank", "evidence_coverage", "commit_diffed", "bad_file_read",
           "bad_file_edited", "bad_function_edited", "files_read_before_patch", "repair"]
display(Markdown(to_markdown(located.groupby("policy")[columns]
                             .agg(lambda c: pd.to_numeric(c, errors="coerce").mean()).round(2))))

# %% [markdown]
# How to read this: the ceiling separates the two halves of the job. Where phase 2 is the
# bottleneck, work on the code agent (better reading, real fixes instead of reverts); where the
# phase-1 handoff costs repair, work on diagnosis and on what the belief carries. r_cross
# rewards only what a handoff adds: it is zero wherever the phase-2 policy repairs as well
# without context, so a policy earns no cross-phase credit for a task it would solve blind.
