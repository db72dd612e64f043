"""``srelib demo``: the baselines, the oracle-P1 ceiling and the repair ladder, written to one
folder as CSV, Markdown and PNGs.

The demo's CSVs name a policy and a handoff "null": read them with
``pandas.read_csv(path, keep_default_na=False, na_values=[""])`` so it stays a name.
"""

from __future__ import annotations

import functools
import time

from srelib.commands.options import output_dir
from srelib.commands.runs import print_summary, save_figure, write_plots
from srelib.policies.registry import build_policy, scripted_policy

#: Columns that change from run to run; the demo's CSVs leave them out so a rerun reproduces them.
TIMING_COLUMNS = ("wall_s", "latency_s")
#: What ``srelib demo`` runs: the baselines, the ceiling of the aimed repair (a phase-2 policy
#: that turns a better handoff into a better edit), and the repair ladder climbed with it, next
#: to real phase-2 policies (after the oracle handoff; the saved agent where one exists) and
#: joint ones.
DEMO_POLICIES = ("null", "random", "oracle-random", "heuristic", "heuristic-revert",
                 "heuristic-partial-revert", "reference")
DEMO_PHASE1 = {"heuristic": "HeuristicPhase1Policy"}
DEMO_PHASE2 = "AimedRepairPhase2Policy"
DEMO_LADDER_REAL = {"random": "RandomPhase2Policy", "revert": "RevertPhase2Policy",
                    "partial-revert": "PartialRevertPhase2Policy",
                    "aimed-repair": "AimedRepairPhase2Policy"}
DEMO_LADDER_JOINT = ("heuristic-revert", "heuristic-partial-revert", "heuristic-aimed-repair")
#: What the second table of summary.md reports (srelib.results.localisation).
DIAGNOSIS_NOTE = ("Phase-1 accuracy per policy (pools C and D): `culprit_top1`, `culprit_top3`: "
                  "share of episodes whose culprit is first, or in the first three, of the "
                  "services blamed (latest first) then checked; `class_correct`: the last "
                  "declared class is the task's; `hop_distance`: mean calls from the last "
                  "blamed service to the culprit; `blamed_culprit`: share that ever blamed it; "
                  "`blame_minutes`: median simulated minutes to that first correct blame.")
#: The demo's paired comparison: what reverting the suspect's deploy adds to the heuristic SRE.
DEMO_COMPARE = ("heuristic-revert", "heuristic")


def cmd_demo(args) -> int:
    """``srelib demo``: the baselines, the oracle-P1 ceiling and the repair ladder, in ``--out``."""
    from srelib.analysis.ceiling import (ceiling_episodes, handoff_gain, sampled_ladder,
                                         suite_ladder, summarize_ceiling, summarize_ladder)
    from srelib.plots.ceiling import ceiling_gap, repair_ladder
    from srelib.plots.outcomes import localisation_vs_score
    from srelib.runners.rollout import evaluate
    from srelib.analysis.stats import to_markdown
    from srelib.extras import require
    from srelib.results.localisation import diagnosis_summary

    pd = require("pandas", "srelib demo")
    out = output_dir(args.out, "--out")
    start = time.perf_counter()
    common = {"seeds": args.seeds, "workers": args.workers, "progress": not args.no_progress}
    frame = evaluate({n: scripted_policy(n) for n in DEMO_POLICIES}, tasks="all",
                     pools=["C", "D"], **common)
    frame.drop(columns=list(TIMING_COLUMNS)).to_csv(out / "episodes.csv", index=False)
    summary = print_summary(frame, DEMO_POLICIES)
    diagnosis = to_markdown(diagnosis_summary(frame, DEMO_POLICIES), index=False)
    print(f"\n{DIAGNOSIS_NOTE}\n\n{diagnosis}")
    (out / "summary.md").write_text(f"{summary}\n\n{DIAGNOSIS_NOTE}\n\n{diagnosis}\n")
    written = write_plots(frame, out, DEMO_POLICIES, compare=DEMO_COMPARE)

    phase2 = functools.partial(build_policy, DEMO_PHASE2)
    phase1 = {n: functools.partial(build_policy, c) for n, c in DEMO_PHASE1.items()}
    episodes = ceiling_episodes(phase2, phase1, tasks="all", **common)
    episodes.drop(columns=list(TIMING_COLUMNS)).to_csv(out / "ceiling_episodes.csv", index=False)
    table = summarize_ceiling(episodes)
    table.to_csv(out / "ceiling.csv", index=False)
    ceiling_md = to_markdown(_ceiling_cells(table))
    print(f"\nOracle-P1 ceiling of {DEMO_PHASE2}: repair [95% CI] per handoff, and the gaps:\n")
    print(ceiling_md)
    gain_md = to_markdown(handoff_gain(episodes).round(3), index=False)
    print(f"\nOracle over null handoff for {DEMO_PHASE2}, paired on task and seed:\n")
    print(gain_md)
    ceiling_md += f"\n\nOracle over null handoff, paired on task and seed:\n\n{gain_md}"
    save_figure(ceiling_gap(table, phase2=DEMO_PHASE2), out / "ceiling_gap.png")
    save_figure(localisation_vs_score(frame, policies=DEMO_POLICIES), out / "localisation.png")
    written += [out / "ceiling_gap.png", out / "localisation.png"]

    ladder = suite_ladder(generated_tasks=args.generated_tasks, repairer="aimed",
                          real={n: functools.partial(build_policy, c)
                                for n, c in DEMO_LADDER_REAL.items()},
                          joint={n: scripted_policy(n) for n in DEMO_LADDER_JOINT}, **common)
    agent = _saved_agent()
    if agent:  # one seed per classic task and a few generated ones: it is a slow CPU model
        ladder = pd.concat([ladder, sampled_ladder(agent, repairer="aimed", workers=args.workers,
                                                   progress=not args.no_progress)],
                           ignore_index=True)
    ladder.drop(columns=list(TIMING_COLUMNS)).to_csv(out / "ladder_episodes.csv", index=False)
    steps = summarize_ladder(ladder)
    steps.to_csv(out / "ladder.csv", index=False)
    ladder_md = to_markdown(_ladder_cells(steps), index=False)
    print("\nRepair ladder: repaired in full [95% CI] per rung and policy, per suite:\n")
    print(ladder_md)
    save_figure(repair_ladder(steps), out / "repair_ladder.png")
    written.append(out / "repair_ladder.png")
    (out / "ceiling.md").write_text(_ceiling_markdown(ceiling_md, ladder_md, steps))
    print(f"\nwrote {out}/episodes.csv, summary.md, ceiling.csv, ladder.csv, ceiling.md and "
          f"{len(written)} plots in {time.perf_counter() - start:.0f}s")
    return 0


def _saved_agent() -> dict:
    """``{"agent": factory}`` for the saved agent of ``make agent`` where one exists, else {}."""
    from srelib.training.agent import agent_policy, find_agent

    folder = find_agent()
    return {"agent": functools.partial(agent_policy, folder)} if folder else {}


def _ladder_cells(steps):
    """One row per suite and policy: episodes, repaired in full and repair as "mean [CI]"."""
    from srelib.analysis.stats import format_ci

    return steps.assign(
        policy=[p.replace("rung:", "rung ") for p in steps.policy],
        full=[format_ci(*v) for v in zip(steps.full, steps.full_low, steps.full_high)],
        repair=[format_ci(*v) for v in zip(steps.repair, steps.repair_low, steps.repair_high)],
        commit_diffed=steps.commit_diffed.round(2), bad_file_edited=steps.bad_file_edited.round(2),
    )[["suite", "policy", "kind", "n", "full", "repair", "commit_diffed", "bad_file_edited"]]


def _ceiling_markdown(ceiling_md: str, ladder_md: str, steps) -> str:
    """results/ceiling.md: the per-task ceiling, the ladder, the no-answer baseline's rate."""
    from srelib.analysis.stats import format_ci

    baseline = steps[steps.policy == "rung:belief"]
    rates = "; ".join(f"{row.suite} {format_ci(row.full, row.full_low, row.full_high)} "
                      f"(n = {row.n})" for row in baseline.itertuples())
    return (f"# Oracle-P1 ceiling and repair ladder\n\n"
            f"## Oracle-P1 ceiling of {DEMO_PHASE2} per classic task\n\n"
            "Repair [95% bootstrap CI] after each handoff (oracle: pool B; null and heuristic: "
            "their own handoff, pools C/D), and the paired gaps to the oracle handoff.\n\n"
            f"{ceiling_md}\n\n## Repair ladder\n\n"
            f"Each rung is the aimed repair ({DEMO_PHASE2}) given one more piece of the answer "
            "after the oracle handoff (the bad file and function are its aim): the oracle belief (`rung belief`, the no-answer baseline itself), + the bad "
            "commit, + the bad file, + the bad function, + the reference patch. `oracle handoff` "
            "rows are real phase-2 policies after the same handoff; `joint` rows play both "
            "phases (pool C for train tasks, D for held-out ones). `full`: share of episodes "
            "repaired in full; `repair`: the score's repair component; `commit_diffed`, "
            "`bad_file_edited`: localisation columns (means). Generated suites: one seed per "
            "task.\n\n"
            f"{ladder_md}\n\n"
            f"No-answer baseline ({DEMO_PHASE2} after the oracle handoff), share repaired in "
            f"full [95% CI]: {rates}.\n")


def _ceiling_cells(table):
    """One row per task: repair under each handoff and each gap to oracle, as "mean [CI]"."""
    from srelib.analysis.stats import format_ci

    cells = table.assign(repair_cell=[format_ci(*v) for v in
                                      zip(table.repair, table.ci_low, table.ci_high)],
                         gap_cell=[format_ci(*v) for v in
                                   zip(table.gap, table.gap_low, table.gap_high)])
    wide = cells.pivot(index="task", columns="handoff", values="repair_cell")
    gaps = cells[cells.handoff != "oracle"].pivot(index="task", columns="handoff",
                                                  values="gap_cell")
    handoffs = list(dict.fromkeys(table["handoff"]))
    wide = wide[handoffs].join(gaps[handoffs[1:]].add_prefix("gap oracle-"))
    wide = wide.reindex(list(dict.fromkeys(table["task"])))
    wide.columns.name = None
    return wide
