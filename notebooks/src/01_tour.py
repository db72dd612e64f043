# %% [markdown]
# # 01 · A tour of srelib
#
# srelib drops an agent into a simulated production incident across seven services. In
# **phase 1** it investigates (alerts, logs, metrics, dependencies, deploy history), mitigates
# (restart, roll back, scale) and declares a root cause; then it hands a structured *belief*
# over to **phase 2**, where it works in a small code repository (list, read, search, git log,
# diffs) and ends by proposing a patch or by declaring that no code change is needed.
# The episode is graded from its trajectory alone; a patch is graded by hidden tests.
#
# This notebook shows one incident, steps through an episode live, replays a saved one, takes
# the score apart, and ends with the validity table that keeps the score honest.
# Everything runs on a CPU in a few seconds.

# %% tags=["parameters"]
TASK = "memory_leak"        # any name from srelib.TASKS
POOL = "C"                  # A p1_only, B p2_only, C joint, D held-out joint
SEED = 7                    # the incident's seed: same seed, same incident
POLICY = "heuristic-revert" # a scripted policy name from `srelib eval --help`
STEPS_TO_SHOW = 4           # steps driven through the stepper before running to the end
VALIDITY_SEEDS = 2          # seeds per task in the validity table
SHORTCUT_SEEDS = 5          # seeds per task in the single-field rule table

# %% install srelib

# %% [markdown]
# ## The tasks and the pools
#
# Each task is one incident scenario with its own code repository. Pools decide which tasks an
# episode draws from and which phases it plays: pool B skips phase 1 and hands the agent the
# *oracle* belief, so phase-2 skill can be measured on its own; pool D holds the held-out tasks.

# %%
import pandas as pd
from IPython.display import HTML, Markdown, display

import srelib
from srelib.widgets import markup, observation_panes
from srelib.env.tasks.pools import POOLS
from srelib.analysis.stats import to_markdown

tasks = pd.DataFrame([{"task": t, "severity": srelib.get_scenario(t).severity,
                       "held out": srelib.get_scenario(t).heldout,
                       "repository": srelib.get_scenario(t).repo,
                       "pools": ",".join(p for p in POOLS if t in POOLS[p].tasks),
                       "title": srelib.get_scenario(t).title} for t in srelib.TASKS])
pools = pd.DataFrame([{"pool": p, "mode": POOLS[p].mode, "tasks": len(POOLS[p].tasks),
                       "description": POOLS[p].description} for p in POOLS])
display(Markdown(to_markdown(tasks, index=False)), Markdown(to_markdown(pools, index=False)))

# %% [markdown]
# ## What an incident looks like
#
# `IncidentEnv` follows Gymnasium: `reset(...)` returns `(observation, info)`. The observation
# is a plain JSON-serialisable dict: the page the on-call engineer got, the status of each
# service, the step budget, and the actions that are valid right now. The render helpers turn
# it into the same panes the widgets use.

# %%
env = srelib.IncidentEnv()
obs, info = env.reset(task=TASK, pool=POOL, seed=SEED)
print("info:", info)
panes = observation_panes.incident(obs) + observation_panes.status_board(obs["service_statuses"])
display(HTML(markup.style_tag() + markup.pane(panes)))

# %% [markdown]
# The valid actions are spelled `action_type` or `action_type:service`; phase 1 and phase 2
# offer different sets, and the transition is the bridge between them:

# %%
from srelib.env import actions

phases = pd.DataFrame([
    {"phase": 1, "kind": "investigate", "actions": ", ".join(a.value for a in actions.PHASE1_DIAGNOSTIC)},
    {"phase": 1, "kind": "mitigate", "actions": ", ".join(a.value for a in actions.PHASE1_REMEDIATION)},
    {"phase": 1, "kind": "conclude", "actions": "declare_root_cause, transition_to_phase2 (hands the belief over)"},
    {"phase": 2, "kind": "read the code", "actions": ", ".join(a.value for a in actions.PHASE2_DIAGNOSTIC)},
    {"phase": 2, "kind": "end the episode", "actions": ", ".join(a.value for a in actions.PHASE2_TERMINAL)},
])
display(Markdown(to_markdown(phases, index=False)))
print(f"{len(obs['valid_actions'])} valid actions now, e.g.", obs["valid_actions"][:4])

# %% [markdown]
# ## One episode, step by step
#
# `EpisodeStepper` plays an incident live: pick a task, pool, seed and policy (or `manual`, to
# choose each action yourself from a form), then press **Step** or **Run to end**. Below it is
# driven from code: its buttons are clicked programmatically, and each line printed is the
# widget's own one-line summary plus the action just taken.

# %%
from srelib import scripted_policy
from srelib.widgets import EpisodeStepper

stepper = EpisodeStepper(policy=scripted_policy(POLICY)(), task=TASK, pool=POOL, seed=SEED)
display(stepper)

# %%
def action_text(action):
    """An action as one short line: type, target and parameter names."""
    target = f" -> {action['target_service']}" if action.get("target_service") else ""
    params = ", ".join(sorted(action.get("parameters") or {}))
    return f"{action['action_type']}{target}" + (f" ({params})" if params else "")


phase2_start = None
for _ in range(STEPS_TO_SHOW):
    stepper.step_button.click()
    print(f"{stepper!r}  <- {action_text(stepper.last_action)}")

while not stepper.done:  # the rest of the episode, through the same API
    stepper.step()
    print(f"{stepper!r}  <- {action_text(stepper.last_action)}")
    if phase2_start is None and stepper.obs["current_phase"] == 2:
        phase2_start = stepper.obs

# %% [markdown]
# At the transition the observation changes shape: phase 2 adds the issue text built from the
# incident and the handed-over belief, the repository's file tree, and the sha of the suspected
# service's latest deploy (when that deploy is in this repository's history).

# %%
if phase2_start is None:
    print(f"{POLICY} never reached phase 2 within the budget.")
else:
    print("phase-2 keys:", sorted(set(phase2_start) - set(obs)))
    print("bad_commit_sha:", phase2_start["bad_commit_sha"])
    print(f"file_tree: {len(phase2_start['file_tree'])} files, e.g. {phase2_start['file_tree'][:3]}")
    print("issue:\n" + phase2_start["issue"])

# %% [markdown]
# The panes above now show the last step, the belief handed to phase 2 and the score. The
# environment kept the whole trajectory: one record per step with the action, its validity,
# the reward and the service statuses after it.

# %%
trajectory = pd.DataFrame([{"step": r["step"], "phase": r["phase"], "minute": r["minute"],
                            "action": action_text(r["action"]), "valid": r["valid"],
                            "reward": r["reward"],
                            "unhealthy": sum(s != "healthy" for s in r["statuses"].values())}
                           for r in stepper.env.trajectory])
trajectory

# %% [markdown]
# ## Replaying a saved episode
#
# Evaluations store every episode (trajectory, score, policy, seed) as one JSON line.
# `TrajectoryViewer` replays a stored episode with a slider, re-running its actions in a fresh
# environment to recover what each step showed; `to_html` writes the same replay as a static,
# self-contained page (handy for sharing, or where widgets do not render).

# %%
import tempfile
from pathlib import Path

from srelib.widgets import TrajectoryViewer, to_html

saved = Path(tempfile.mkdtemp()) / "episode.json"
episode = srelib.run_episode(srelib.IncidentEnv(), scripted_policy(POLICY)(),
                             task=TASK, pool=POOL, seed=SEED)
saved.write_text(episode.to_json())
viewer = TrajectoryViewer(saved)
viewer.show(len(viewer.steps) // 2)
display(viewer)

# %%
page = to_html(saved)
print(f"static page: {len(page):,} characters, {page.count('<details>')} collapsible steps")
display(HTML(page))

# %% [markdown]
# ## How the score is made
#
# The score is computed from the trajectory alone, so any saved episode re-grades to the same
# number. Four components, each in [0, 1], are combined with fixed weights; which of them count
# depends on the mode (and mitigation only counts where the scenario requires remediation):

# %%
from srelib.env.grading.score import WEIGHTS

from srelib.env.tasks.pools import MODES

# which components count in each mode, read from the grader itself (an empty trajectory)
counted_by_mode = {m: srelib.score_trajectory(TASK, m, [])["counted"] for m in MODES}
weights = pd.DataFrame({"weight": WEIGHTS}).rename_axis("component")
weights["counted in"] = [", ".join(m for m in MODES if c in counted_by_mode[m]) for c in weights.index]
weights

# %% [markdown]
# The breakdown of the episode above: each counted component times its weight, renormalised over
# the counted weights, sums to the final score. Re-grading the stored trajectory with
# `srelib.score_trajectory` gives the same result.

# %%
score = episode.score
counted = score["counted"]
total_weight = sum(WEIGHTS[c] for c in counted)
breakdown = pd.DataFrame([{"component": c, "value": score[c], "weight": WEIGHTS[c],
                           "counted": c in counted,
                           "contribution": WEIGHTS[c] * score[c] / total_weight if c in counted else None}
                          for c in WEIGHTS]).set_index("component")
display(breakdown)
regraded = srelib.score_trajectory(episode.task, episode.mode, episode.steps)
print(f"final {score['final']:.4f} = sum of contributions {breakdown['contribution'].sum():.4f}; "
      f"re-graded from the trajectory: {regraded['final']:.4f}")
patch = score["patch"]
if patch is not None:
    passed = {g: f"{sum(patch[g].values())}/{len(patch[g])}" for g in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    print(f"patch applied: {patch['patch_applied']}, resolved: {patch['resolved']}, "
          f"hidden tests passed: {passed}")

# %% [markdown]
# A patch is agent-written code, so its hidden tests run isolated from this machine. With
# bubblewrap (`"bwrap"`) the tests see no network, no other process, no file of the machine
# outside the interpreter, and a size-capped scratch copy of the repository. Without it, grading
# falls back to a separate uid (`"uid-drop"`, when run as root) or to resource limits alone
# (`"rlimits-only"`). Each patch grade and each `run.json` records the level it ran under.

# %%
import srelib.env.grading.sandbox.isolate

print("patch grading isolation on this machine:", srelib.env.grading.sandbox.isolate.isolation_level())

# %% [markdown]
# ## The validity table
#
# A score is only useful if shortcuts cannot earn it. The validity gate plays the reference
# policy (the answer key, which must score high) and a set of shortcut policies, each on every
# task in its joint pool, and checks the mean score per task against its bound:

# %%
from srelib.analysis.validity import GATE, format_validity_table, validity_table

floors = [f"{cls.name} >= {bound}" for cls, (kind, bound) in GATE.items() if kind == "min"]
shortcuts = pd.DataFrame([{"shortcut policy": cls.name, "must score": f"<= {bound}",
                           "what it does": (cls.__doc__ or "").strip().splitlines()[0]}
                          for cls, (kind, bound) in GATE.items() if kind == "max"])
print("must score high:", ", ".join(floors))
display(Markdown(to_markdown(shortcuts, index=False)))

# %%

rows = validity_table(seeds=range(VALIDITY_SEEDS))
failed = [r for r in rows if not r["ok"]]
print(f"{len(rows) - len(failed)} of {len(rows)} checks pass "
      f"({VALIDITY_SEEDS} seeds per task)" + ("" if not failed else
      ": failing " + ", ".join(f"{r['policy']} on {r['task']}" for r in failed)))
display(Markdown(format_validity_table(rows)))

# %% [markdown]
# ## No single-field shortcut
#
# Real incidents often follow a deploy, and the data keeps that: but innocent deploys are
# common too, commit subjects share one style, and descriptions vary. So no one-line rule over a
# single field (the newest deploy, the first alert, a keyword in a deploy note, the largest
# commit, ...) names the culprit service, the fault class or the bad commit in more than 60% of
# episodes. Each row below is such a rule and how often it is right, over every task and
# `SHORTCUT_SEEDS` seeds (the README's table uses 20):

# %%
from srelib.analysis.shortcuts import MAX_HIT_RATE, format_rule_table, shortcut_rule_table

rule_rows = shortcut_rule_table(seeds=SHORTCUT_SEEDS)
print(f"every rule at or under {MAX_HIT_RATE:.0%}:",
      all(r["hit_rate"] <= MAX_HIT_RATE for r in rule_rows))
display(Markdown(format_rule_table(rule_rows)))

# %% [markdown]
# Next: `02_baselines` runs the scripted baselines over every task, pool and many seeds, and
# `03_oracle_p1_ceiling` measures how much a perfect phase 1 is worth to a phase-2 agent.
