# %% [markdown]
# # 02 · Scripted baselines
#
# Before any model is worth running, we need to know what *no skill*, *some skill* and *all the
# answers* score. This notebook runs srelib's scripted policies over every task, every pool and
# many seeds:
#
# * the seed's three baselines: `NullPhase1Policy` + `RandomPhase2Policy` (no diagnosis, a
#   random look at the code; in pool B, where the oracle belief is handed over, this is
#   `RandomPhase2Policy` on its own) and `OracleP1ThenRandomP2Policy` (a perfect handoff, then
#   the same random phase 2), plus `NullPhase1Policy` alone;
# * the heuristic on-call engineer `HeuristicPhase1Policy`, with the random phase 2 or with
#   `RevertPhase2Policy`, which reverts the suspected commit;
# * the reference policy, which plays the answer key: the ceiling.
#
# Everything below is computed from the episodes; rerun with more `SEEDS` for tighter intervals.

# %% tags=["parameters"]
SEEDS = 8                      # seeds per (policy, task, pool); the CLI demo uses 50
TASKS = "all"                  # "all" or a list of task names
POOLS = ["A", "B", "C", "D"]   # every pool: p1_only, p2_only, joint, held-out joint
WORKERS = 1                    # processes; more helps on a many-core machine
POLICIES = ["null", "random", "oracle-random", "heuristic", "heuristic-revert", "reference"]
GEN_PER_FAMILY = 2             # generated tasks per (family, split) in the last section; None: all
GEN_SEEDS = 1                  # seeds per generated task

# %% install srelib

# %% [markdown]
# ## The policies
#
# Each name is a scripted policy of `srelib eval` (`srelib.POLICY_CLASSES`): one class that
# plays both phases, or a phase-1 class joined to a phase-2 class by `CompositePolicy`.

# %%
import pandas as pd
from IPython.display import Markdown, display

from srelib import POLICY_CLASSES, scripted_policy
from srelib.analysis.stats import to_markdown

roster = pd.DataFrame([{"policy": name, "phase 1": classes[0],
                        "phase 2": classes[-1] if len(classes) > 1 else "(same class)"}
                       for name, classes in POLICY_CLASSES.items() if name in POLICIES])
display(Markdown(to_markdown(roster, index=False)))

# %% [markdown]
# ## Running the grid
#
# `srelib.evaluate` runs every policy on every task of every pool for each seed, gives each
# episode a fresh policy reset with the episode's seed, and returns a tidy frame with one row per
# episode. With `out=` it also stores every episode (trajectory included) in a run directory, which
# we use below to look inside the episodes.

# %%
import tempfile

import srelib
from srelib.results import load_episodes

run_dir = tempfile.mkdtemp(prefix="srelib-baselines-")
frame = srelib.evaluate({name: scripted_policy(name) for name in POLICIES}, tasks=TASKS,
                        pools=POOLS, seeds=SEEDS, workers=WORKERS, out=run_dir, progress=False)
episodes = load_episodes(run_dir)
print(f"{len(frame)} episodes: {frame['policy'].nunique()} policies x {frame['task'].nunique()} "
      f"tasks x {SEEDS} seeds over pools {', '.join(POOLS)}; "
      f"{int(frame['error'].notna().sum())} policy errors")
frame[["policy", "task", "pool", "mode", "seed", "final", "diagnosis", "mitigation", "repair",
       "efficiency", "p1_steps", "p2_steps", "ended_by"]].head()

# %% [markdown]
# ## Summary with confidence intervals
#
# Mean final score per policy and pool, with a 95% percentile-bootstrap interval over episodes
# (`srelib.analysis.stats.summarize`; seeded, so the intervals are reproducible). Pool A grades phase 1
# only, pool B phase 2 only, pools C and D the whole episode.

# %%
from srelib.analysis.stats import format_ci, summarize, summary_table

by_pool = summarize(frame, "final", by=("policy", "pool"))
cells = by_pool.assign(cell=[format_ci(m, lo, hi) for m, lo, hi in
                             zip(by_pool["mean"], by_pool["ci_low"], by_pool["ci_high"])])
pool_table = cells.pivot(index="policy", columns="pool", values="cell").reindex(POLICIES)
pool_table.columns.name = None
display(Markdown(to_markdown(pool_table)))

# %% [markdown]
# Per task, in the joint pools (C for the training tasks, D for the held-out ones):

# %%
joint = frame[frame["mode"] == "joint"]
display(Markdown(to_markdown(summary_table(joint)[POLICIES])))

# %% [markdown]
# ## Score distributions
#
# A mean hides how a policy fails. Each point below is one joint episode: a scripted policy
# that ignores its seed gives a single line per task, a seeded one (the heuristic probes quiet
# services at random) spreads out.

# %%
%matplotlib inline
from srelib import plots

plots.score_distributions(joint, policies=POLICIES)

# %%
plots.score_distributions(joint, kind="ecdf", policies=POLICIES)

# %% [markdown]
# ## Where the points come from
#
# The component breakdown stacks each component's weighted contribution (diagnosis, mitigation,
# repair, efficiency), so the height of a bar is the final score and the colours say which part
# of the job earned it.

# %%
plots.component_breakdown(joint, policies=POLICIES)

# %% [markdown]
# The same as numbers. Each episode's final score is the sum of its components' contributions
# (value times weight, over the weights counted in that episode), so what a policy *loses* per
# component adds up to exactly `1 - final`. The last columns name the component that costs each
# policy the most.

# %%
from srelib.env.grading.score import WEIGHTS


def contributions(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per episode: each component's contribution to the final score, and the most it could give."""
    weights = pd.Series(WEIGHTS)
    counted = rows[list(WEIGHTS)].notna()
    total = counted.mul(weights).sum(axis=1)
    earned = rows[list(WEIGHTS)].fillna(0.0).mul(weights).div(total, axis=0)
    possible = counted.mul(weights).div(total, axis=0)
    return earned, possible


earned, possible = contributions(joint)
lost = (possible - earned).groupby(joint["policy"]).mean().reindex(POLICIES)
losses = lost.add_prefix("lost on ")
losses["final"] = joint.groupby("policy")["final"].mean()
losses["loses most on"] = lost.idxmax(axis=1)
losses.round(3)

# %% [markdown]
# ## What the weak agents do wrong
#
# The frame says *how much* a policy loses; the stored episodes say *why*. Every phase 2 ends in
# one of a few ways, which we classify from the score's patch record:

# %%
def outcome(episode) -> str:
    """How an episode's phase 2 ended, from its score breakdown."""
    score = episode.score or {}
    if score.get("repair") is None:
        return "phase 2 not graded"
    if score.get("declared_no_change"):
        return "declared no change" + (" (correct)" if score["repair"] == 1 else " (wrong)")
    patch = score.get("patch")
    if patch is None:
        return "no patch"
    if not patch["patch_applied"]:
        error = patch.get("apply_error") or ""
        return "empty patch" if error.startswith("empty patch") else "patch does not apply"
    return {"full": "resolved", "partial": "partially resolved"}.get(patch["resolved"],
                                                                     "applied, tests fail")


outcomes = pd.DataFrame([{"policy": e.policy, "pool": e.pool, "outcome": outcome(e)}
                         for e in episodes if e.mode != "p1_only"])
shares = pd.crosstab([outcomes["policy"], outcomes["pool"]], outcomes["outcome"], normalize="index")
shares = shares.reindex(POLICIES, level=0)
shares.index = [f"{policy} ({pool})" for policy, pool in shares.index]
display(Markdown(to_markdown(shares.map(lambda v: f"{v:.0%}" if v else ""))))

# %% [markdown]
# A trajectory excerpt makes it concrete: the seed's random phase-2 explorer in pool B, where it
# is handed the oracle belief and the bad commit's sha, on the first task and seed.

# %%
def excerpt(episode) -> pd.DataFrame:
    """The episode's records as short lines: phase, action, its main argument, reward."""
    rows = []
    for record in episode.steps:
        action = record["action"]
        params = action.get("parameters") or {}
        argument = next((f"{k}={str(v)[:40]!r}" for k, v in params.items() if k != "belief"),
                        "belief=..." if "belief" in params else "")
        rows.append({"step": record["step"], "phase": record["phase"],
                     "action": action["action_type"], "target": action.get("target_service") or "",
                     "argument": argument, "reward": record["reward"]})
    return pd.DataFrame(rows)


example = next(e for e in episodes if e.policy == "random" and e.pool == "B")
patch = example.score["patch"]
print(f"{example.policy} on {example.task} (pool {example.pool}, seed {example.seed}): "
      f"final {example.final:.3f}; patch applied: {patch['patch_applied']}; "
      f"apply error: {(patch['apply_error'] or 'none').splitlines()[0]}")
excerpt(example)

# %% [markdown]
# It fetches the diff of the commit that *caused* the incident and proposes that same diff
# again. That commit is already in the repository, so the patch cannot apply, and repair is zero.
# With the null handoff of pools C and D it does not even get a sha, so it has no diff to propose.
#
# Phase 1 has its own failure modes. For the heuristic engineer, how often did its handoff name
# an acceptable root-cause service, and how many harmful remediations (restarting an uninvolved
# service, rolling back a good deploy) did it take?

# %%
def handoff_row(episode) -> dict:
    scenario = srelib.get_scenario(episode.task)
    belief = episode.handoff or {}
    return {"task": episode.task,
            "right service": belief.get("suspected_service") in scenario.acceptable_services,
            "right fault class": belief.get("suspected_fault_class") == scenario.fault_class,
            "harmful actions": episode.score["harmful_actions"],
            "diagnosis": episode.score["diagnosis"]}


heuristic = pd.DataFrame([handoff_row(e) for e in episodes
                          if e.policy == "heuristic-revert" and e.mode == "joint"])
per_task = heuristic.groupby("task").mean().reindex(
    [t for t in srelib.TASKS if t in set(heuristic["task"])])
per_task.round(2)

# %%
misled = per_task[per_task["right service"] < 1].index.tolist()
print(f"The heuristic names the right service in {heuristic['right service'].mean():.0%} of joint "
      f"episodes; it is misled at least once on: {', '.join(misled) or 'no task'}.")

# %% [markdown]
# ## Diagnosis as the field reports it
#
# RCA benchmarks (AIOpsLab, ITBench, RCAEval) score phase 1 by where the culprit ranks and how
# far off a wrong guess lands. Every results frame carries these columns
# (`srelib.results.localisation`): `culprit_top1` and `culprit_top3` (the culprit first, or in
# the first three, of the services the policy blamed, latest first, then those it checked),
# `class_correct` (its last declared fault class), `hop_distance` (calls from the service it
# last blamed to the culprit), and `blame_minutes` (simulated minutes to its first correct
# blame). Per policy, over the episodes that played phase 1:

# %%
from srelib.results.localisation import diagnosis_summary

display(Markdown(to_markdown(diagnosis_summary(frame[frame["mode"] != "p2_only"], POLICIES),
                             index=False)))

# %% [markdown]
# ## Does the phase-2 policy matter?
#
# `heuristic` and `heuristic-revert` share phase 1 exactly; only phase 2 differs. A paired
# comparison (same task, pool and seed, so the same incident) isolates what reverting the suspect
# commit is worth over the random explorer:

# %%
from srelib.analysis.stats import paired_difference

paired = paired_difference(joint, "heuristic-revert", "heuristic", value="final")
display(Markdown(to_markdown(paired, index=False)))

# %% [markdown]
# ## Reading the results
#
# The findings below are computed from this run's episodes, so they stay true when the policies
# or the environment change and the notebook is rerun.

# %%
def top_outcome(policy: str) -> str:
    rows = outcomes[(outcomes["policy"] == policy) & (outcomes["pool"] != "B")]
    counts = rows["outcome"].value_counts(normalize=True)
    return f"{counts.index[0]} ({counts.iloc[0]:.0%} of joint episodes)"


means = joint.groupby("policy")[["final", *WEIGHTS]].mean()
by_policy = earned.groupby(joint["policy"]).sum()
phase1_share = (by_policy["diagnosis"] + by_policy["mitigation"]) / by_policy.sum(axis=1)
gain = earned.groupby(joint["policy"]).mean()
best = means.drop("reference")["final"].idxmax()
display(Markdown("\n".join([
    f"* **No skill.** `null` scores {means.loc['null', 'final']:.2f} and `random` "
    f"{means.loc['random', 'final']:.2f} in the joint pools; their most common phase-2 ending is "
    f"{top_outcome('null')} and {top_outcome('random')} respectively.",
    f"* **What a perfect handoff buys a weak phase 2.** With the oracle belief, the random phase 2 repairs "
    f"{means.loc['oracle-random', 'repair']:.2f} on average (after a null handoff: "
    f"{means.loc['random', 'repair']:.2f}); `oracle-random` gains "
    f"{means.loc['oracle-random', 'final'] - means.loc['random', 'final']:+.2f} final score, "
    f"of which diagnosis (credited to the handed-over belief) contributes "
    f"{gain.loc['oracle-random', 'diagnosis'] - gain.loc['random', 'diagnosis']:+.2f} and repair "
    f"{gain.loc['oracle-random', 'repair'] - gain.loc['random', 'repair']:+.2f}. "
    f"`03_oracle_p1_ceiling` measures this for stronger phase-2 policies.",
    f"* **Where the heuristic's points come from.** Diagnosis and mitigation make up "
    f"{phase1_share['heuristic']:.0%} of `heuristic`'s score and "
    f"{phase1_share['heuristic-revert']:.0%} of `heuristic-revert`'s; reverting the suspect "
    f"instead of exploring at random adds {paired['mean_diff'].iloc[-1]:+.2f} "
    f"[{paired['ci_low'].iloc[-1]:.2f}, {paired['ci_high'].iloc[-1]:.2f}].",
    f"* **The ceiling.** `reference` scores {means.loc['reference', 'final']:.2f}; the best "
    f"scripted policy, `{best}`, leaves {means.loc['reference', 'final'] - means.loc[best, 'final']:.2f} "
    f"on the table, and that gap is what an agent can still win.",
])))

# %% [markdown]
# ## Beyond the ten: the generated suite, per family
#
# The ten hand-written tasks are the `classic` suite. The `generated` suite holds hundreds more,
# each a fault family (memory leak, retry storm, deadlock, ...) in a culprit service with a bug
# injected at one site of that service's repository, admitted only when it passes the validity
# gate. Task ids read `family.service.site`; `srelib.list_tasks(suite, split)` lists them, and
# `evaluate`, `IncidentEnv.reset` and `srelib eval --tasks` take ids and suite names alike
# (`"generated"`, `"generated:heldout"`). Pools keep their meaning: C plays the train tasks of
# any suite, D the held-out ones, whose bug shapes no train task has.
#
# This section plays a small sample (`GEN_PER_FAMILY` tasks per family and split, `GEN_SEEDS`
# seed each); the README's table is the same over the whole suite.

# %%
from srelib.analysis.suite_tables import family_sample, family_scores, generated_tables, with_family

suite_tables = generated_tables()
display(Markdown(to_markdown(suite_tables["families"], index=False)))

# %%
GEN_POLICIES = [p for p in POLICIES if p != "oracle-random"]  # the handoff study stays above
sample = family_sample(GEN_PER_FAMILY)
generated = srelib.evaluate({name: scripted_policy(name) for name in GEN_POLICIES}, tasks=sample,
                            pools=["C", "D"], seeds=GEN_SEEDS, workers=WORKERS, progress=False)
print(f"{len(generated)} episodes on {generated['task'].nunique()} of "
      f"{len(srelib.list_tasks('generated'))} generated tasks; "
      f"{int(generated['error'].notna().sum())} policy errors")
display(Markdown(to_markdown(family_scores(generated), index=False)))

# %% [markdown]
# Each cell is the mean final score with the 10th-90th percentile range of its episodes. As
# distributions, one column per family:

# %%
by_family = with_family(generated)
plots.score_distributions(by_family.assign(task=by_family["family"]), policies=GEN_POLICIES,
                          title="final score per generated family (x: family)")

# %%
split_means = by_family.groupby(["policy", "split"])["final"].mean().unstack("split")
display(Markdown(
    f"Over this sample, `heuristic-revert` scores {split_means.loc['heuristic-revert', 'train']:.2f} "
    f"on train tasks and {split_means.loc['heuristic-revert', 'heldout']:.2f} on held-out ones, "
    f"`null` {split_means.loc['null', 'train']:.2f} and {split_means.loc['null', 'heldout']:.2f}, "
    f"and `reference` at least {split_means.loc['reference'].min():.2f} on both: a generated "
    "task is admitted only if the answer key solves it."))
