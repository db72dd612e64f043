# %% [markdown]
# # 06 · Ablations, behaviour metrics and the curriculum
#
# A score says *how well* a policy did; an ablation says *why*. `srelib.ablate` runs named
# conditions on the very same tasks and seeds and compares each with a baseline, pairing the
# episodes that share an incident, with bootstrap CIs. Four ready experiments ask the questions
# the seed's ablation runners asked, built so that their conditions can actually differ:
#
# 1. **stopping**: when should phase 1 stop reading and hand over?
# 2. **credit**: how much credit does counting `r_cross` move onto phase 1?
# 3. **oracle vs learned phase 1**: what does a perfect handoff buy the same phase-2 policy?
# 4. **held-out generalisation**: does a policy keep its score on tasks it was not built on?
#
# Then the behaviour metrics say how the policies acted, and the curriculum driver walks a
# policy through pools A → B → C with a variance gate, closing with a held-out evaluation.

# %% tags=["parameters"]
SEEDS = 4                      # seeds per task and condition; use 20+ for a paper
TASKS = "all"                  # "all" or a list of task names
THRESHOLDS = (0.5, 0.7, 0.9)   # fixed stopping thresholds
CURRICULUM_SEED = 0            # the curriculum's own draws
WORKERS = 1                    # processes for the episodes

# %% install srelib[notebooks]

# %%
import pandas as pd
from IPython.display import Markdown, display

from srelib.analysis import ablations, behaviour
from srelib.plots import behaviour as behaviour_plots
from srelib.analysis.stats import to_markdown


def show(result, caption):
    """The summary and the paired differences of an ablation, as Markdown."""
    display(Markdown(f"**{caption}**\n\n" + to_markdown(result.summary, index=False) + "\n\n"
                     + to_markdown(result.differences, index=False)))

# %% [markdown]
# ## 1 · Stopping
#
# `ThresholdStopPhase1Policy(t)` investigates like the heuristic engineer but hands over as soon
# as its confidence in a suspect reaches `t`; `stop@tuned` uses a threshold per task, tuned on
# seeds 1000+ (never the evaluation seeds). All are joined to `RevertPhase2Policy`, in joint
# episodes over the train and held-out tasks. A low threshold saves steps but trusts thin
# evidence, such as an innocent recent deploy; a high one reads on. The differences are paired
# on (task, seed): the very same incident under each threshold.

# %%
stopping = ablations.stopping_experiment(seeds=SEEDS, tasks=TASKS, thresholds=THRESHOLDS,
                                         workers=WORKERS)
show(stopping, "Final score by stopping threshold (baseline: the lowest)")

# %% [markdown]
# The stopping distributions differ by construction of the thresholds, and the KL divergences
# between them measure by how much; whether stopping later *pays* is what the differences above
# say.

# %%
distribution = behaviour.stopping_distribution(stopping.frame)
kl = behaviour.stopping_kl(stopping.frame)
display(Markdown("Pairwise KL(P ‖ Q), nats:\n\n" + to_markdown(kl.round(2))))
behaviour_plots.stopping(distribution, kl)

# %% [markdown]
# ## 2 · Credit: r_cross counted or not
#
# The same heuristic handoffs, scored two ways: by phase 1's own components alone (diagnosis and
# mitigation), and with `r_cross` added, the repair its handoff earned over an empty handoff
# (calibrated per task with `srelib.measure_null_context`). The difference is the credit that
# only cross-phase accounting gives phase 1; a CI that excludes 0 says phase 1's handoff really
# did help phase 2.

# %%
credit = ablations.credit_experiment(seeds=SEEDS, tasks=TASKS, workers=WORKERS)
show(credit, "Phase-1 credit without and with r_cross")

# %% [markdown]
# ## 3 · Oracle against learned phase 1
#
# The same phase-2 policy (revert) after the oracle's perfect handoff and after the heuristic's
# own investigation and mitigation. The outcome is the final score: the oracle gets full
# diagnosis credit from its belief but mitigates nothing; the heuristic earns mitigation but
# is sometimes misled. Phase 2's own component, repair, is shown after it: a blind revert
# repairs nothing (the bad commit's feature has tests of its own), so there the handoffs
# differ only where they change how phase 2 ends.

# %%
oracle = ablations.oracle_phase1_experiment(seeds=SEEDS, tasks=TASKS, workers=WORKERS)
show(oracle, "Final score after the oracle's and the heuristic's phase 1")
display(Markdown(to_markdown(oracle.frame.groupby("policy")[["diagnosis", "mitigation", "repair"]]
                             .mean().round(3))))

# %% [markdown]
# ## 4 · Held-out generalisation
#
# The heuristic engineer with revert on the train tasks (pool C) and on the held-out tasks
# (pool D). The tasks differ, so the comparison is unpaired: two independent means, each
# resampled on its own, and a wide CI at small `SEEDS`.

# %%
heldout = ablations.heldout_experiment(seeds=SEEDS, workers=WORKERS)
show(heldout, "Final score on train and held-out tasks")

# %% [markdown]
# ## Behaviour metrics
#
# Over the stopping experiment's episodes (trajectories included): the order in which each
# policy acts, how well its handed-over confidence matches whether it was right (ECE and a
# reliability diagram), whether doubt widens its phase-2 search, how its patches resolved, and
# which of its actions harmed.

# %%
behaviour_plots.first_positions(behaviour.first_positions(stopping.episodes))

# %%
points, ece = behaviour.calibration(stopping.episodes)
display(Markdown(to_markdown(ece, index=False)))
behaviour_plots.reliability(points, ece)

# %% [markdown]
# A point below the diagonal is overconfidence: the policy handed over a service with more
# confidence than its hit rate at that confidence justifies.

# %%
breadth = behaviour.search_breadth(stopping.episodes)
behaviour_plots.search_breadth(breadth, behaviour.breadth_correlation(breadth))

# %%
from srelib import plots

rates = behaviour.resolved_rates(stopping.frame)
display(Markdown(to_markdown(rates.map(lambda v: f"{v:.0%}"))))
plots.resolved_rates(stopping.frame)

# %%
harm = behaviour.harmful_actions(stopping.episodes)
display(Markdown(to_markdown(harm.head(10), index=False) if len(harm) else "No harmful actions."))
behaviour_plots.harmful(harm.head(10))

# %% [markdown]
# ## The curriculum driver
#
# `srelib.Curriculum` takes any policy through stage A (phase 1 alone), B (phase 2 from the
# oracle handoff) and C (both), drawing each episode's task and seed from its own seeded RNG.
# A per-task variance gate opens the next stage once every task has enough recent scores and
# they have settled; a held-out evaluation (D) closes the run. A `learner` hook is called after
# every episode and stage: a trainer updates the policy there (notebook 07 does). Here the
# reference policy walks the stages; with `out=` a rerun resumes where it stopped.

# %%
import srelib
from srelib.analysis.curriculum import VarianceGate
from srelib.policies import ReferencePolicy

stages_seen = []
curriculum = srelib.Curriculum(ReferencePolicy, seed=CURRICULUM_SEED,
                               gate=VarianceGate(window=4, max_std=0.05, min_samples=2),
                               heldout_episodes=2 * SEEDS,
                               learner=lambda event: stages_seen.append(event.stage)
                               if event.kind == "stage" else None)
run = curriculum.run()
stages = pd.DataFrame([{k: v for k, v in s.items() if k != "spread"} for s in run.stages])
display(Markdown(to_markdown(stages, index=False)))
print("stages the learner heard close:", " -> ".join(stages_seen))
print(f"held-out evaluation: mean final {run.heldout['final'].mean():.3f} "
      f"over {len(run.heldout)} episodes")

# %% [markdown]
# ## Trajectories as data
#
# `srelib.training.trajectories` turns episodes into one row per agent turn: the chat messages the
# policy saw (replayed through the seeded environment and rendered as the chat policies render
# them), the action it took as the JSON a model should answer with, the step reward and the
# episode score. `to_dataset` makes a Hugging Face `datasets.Dataset` of them: the input of SFT
# and RL.

# %%
from srelib.training import trajectories

rows = list(trajectories.turn_rows(run.episodes[:3]))
print(f"{len(rows)} turns from 3 episodes; the first turn's last message begins:")
print(rows[0]["prompt"][-1]["content"][:240])
print("and the answer it is paired with:", rows[0]["completion"][0]["content"][:120])
