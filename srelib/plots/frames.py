"""Plots of evaluation frames: score distributions, components, resolved rates, paired
differences, ceiling gaps, the repair ladder, localisation against score, steps and parse
failures.

Every function takes a results frame (or a ceiling table) and returns a
``matplotlib.figure.Figure``. Figures are built without pyplot, so nothing needs a display and
nothing is shown twice in a notebook: the returned Figure renders inline, and
``fig.savefig("x.png")`` writes a PNG through the Agg canvas on any machine. Colours come from
the Okabe-Ito palette, which stays distinguishable under the common colour-vision deficiencies;
each policy keeps one colour in every plot (:func:`policy_colours`). Titles say how many
episodes each mark summarises and from which pools; a task named ``h/...`` is held out (pool D).
"""

from __future__ import annotations

import math
from typing import Sequence

from srelib.results.store import COMPONENTS

#: Okabe & Ito (2008), ordered so that the first colours contrast best on white.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2", "#CC79A7", "#F0E442",
             "#000000")
KINDS = ("violin", "box", "ecdf")
#: Columns that hold scores in [0, 1]; their axes always span the whole range.
SCORE_COLUMNS = ("final", *COMPONENTS, "r_cross")
#: The colour each ``srelib eval`` policy (and each ceiling handoff) keeps in every plot.
POLICY_COLOURS = {"null": "#000000", "random": "#56B4E9", "oracle-random": "#CC79A7",
                  "oracle": "#CC79A7", "heuristic": "#E69F00", "revert": "#F0E442",
                  "heuristic-revert": "#D55E00", "reference": "#009E73"}
#: Resolved outcomes of a proposed patch (SWE-bench's meaning), best first, and their colours.
RESOLVED = {"full": "#009E73", "partial": "#E69F00", "no": "#D55E00", "no patch": "#BBBBBB"}
HELD_OUT_NOTE = "h/ = held-out task, pool D"


def colour(index: int) -> str:
    """The ``index``-th palette colour (cycling)."""
    return OKABE_ITO[index % len(OKABE_ITO)]


def policy_colours(policies: Sequence[str]) -> dict[str, str]:
    """One distinct colour per policy: a known name keeps its own (:data:`POLICY_COLOURS`),
    other names take the palette colours no policy of this plot uses, in order. Colours
    repeat only past eight policies."""
    taken = {}
    for name in policies:
        fixed = POLICY_COLOURS.get(name)
        if fixed is not None and fixed not in taken.values():
            taken[name] = fixed
    free = [c for c in OKABE_ITO if c not in taken.values()] or list(OKABE_ITO)
    others = [n for n in policies if n not in taken]
    taken.update({name: free[i % len(free)] for i, name in enumerate(others)})
    return {name: taken[name] for name in policies}


def score_distributions(frame, value: str = "final", *, kind: str = "violin",
                        policies: Sequence[str] | None = None, tasks: Sequence[str] | None = None,
                        jitter_seed: int = 0, title: str | None = None):
    """The distribution of ``value`` per task, one colour per policy.

    ``kind="violin"`` or ``"box"`` draws one axes with tasks along x and each policy's episodes
    as a violin (or box) plus jittered points, and a white diamond at the mean with its 95%
    bootstrap CI; ``kind="ecdf"`` draws one small ECDF panel per task.
    """
    import numpy as np
    from matplotlib.lines import Line2D

    from srelib.analysis.stats import bootstrap_ci

    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; valid kinds: {list(KINDS)}")
    policies, tasks = _levels(frame, "policy", policies), _levels(frame, "task", tasks)
    if kind == "ecdf":
        return _ecdf_panels(frame, value, policies, tasks, title)
    colours = policy_colours(policies)
    fig, ax = _figure(width=_width(len(tasks), len(policies)), height=4.8)
    rng = np.random.default_rng(jitter_seed)
    width = 0.8 / len(policies)
    for p, policy in enumerate(policies):
        centres, samples = [], []
        for t, task in enumerate(tasks):
            vals = _values(frame, value, policy=policy, task=task)
            if vals.size:
                centres.append(t + (p - (len(policies) - 1) / 2) * width)
                samples.append(vals)
        if not samples:
            continue
        _draw_bodies(ax, samples, centres, width * 0.9, colours[policy], kind)
        for x, vals in zip(centres, samples):
            jitter = rng.uniform(-width * 0.3, width * 0.3, size=vals.size)
            ax.scatter(x + jitter, vals, s=9, color=colours[policy], edgecolors="white",
                       linewidths=0.3, alpha=0.8, zorder=3,
                       label=policy if x == centres[0] else None)
            mean, low, high = bootstrap_ci(vals, seed=jitter_seed)
            ax.errorbar([x], [mean], yerr=[[mean - low], [high - mean]], fmt="D", ms=4.5,
                        mfc=colours[policy], mec="black", mew=0.8, ecolor="black",
                        elinewidth=1.0, capsize=2.5, zorder=4)
    ax.set_xticks(range(len(tasks)), [_short(t) for t in tasks], rotation=30, ha="right")
    ax.set_xlim(-0.6, len(tasks) - 0.4)
    ax.set_xlabel(_task_axis(tasks))
    ax.set_ylabel(_label(value))
    if value in SCORE_COLUMNS:
        ax.set_ylim(-0.03, 1.03)
    ax.set_title(title or f"{_label(value)} per task ({kind}, one point per episode)\n"
                 f"{_sample_note(frame, policies, tasks)}")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], marker="D", ms=4.5, mfc="#BBBBBB", mec="black", color="black",
                          linewidth=1.0))
    labels.append("mean \u00b1 95% CI")
    ax.legend(handles, labels, title="policy", loc="upper left", bbox_to_anchor=(1.0, 1.0),
              frameon=False, markerscale=1.6)
    ax.grid(axis="y", alpha=0.3)
    return fig


def component_breakdown(frame, *, policies: Sequence[str] | None = None,
                        tasks: Sequence[str] | None = None):
    """Stacked bars of each component's weighted contribution, per task and policy.

    A contribution is the component's mean times its weight, renormalised over the components
    counted in that episode's mode; a black tick marks the mean final score for comparison.
    Colours are components; the hatch of a bar says which policy it is (second legend).
    """
    from matplotlib.patches import Patch

    from srelib.env.grading import WEIGHTS

    policies, tasks = _levels(frame, "policy", policies), _levels(frame, "task", tasks)
    comps = [c for c in WEIGHTS if c in frame.columns]
    fig, ax = _figure(width=_width(len(tasks), len(policies)), height=4.8)
    width = 0.8 / len(policies)
    hatches = ("", "//", "..", "xx", "\\\\", "oo")
    for p, policy in enumerate(policies):
        for t, task in enumerate(tasks):
            rows = frame[(frame["policy"] == policy) & (frame["task"] == task)]
            if rows.empty:
                continue
            counted = rows[comps].notna()
            total = (counted * [WEIGHTS[c] for c in comps]).sum(axis=1)
            x, bottom = t + (p - (len(policies) - 1) / 2) * width, 0.0
            for c, comp in enumerate(comps):
                share = (rows[comp].fillna(0.0) * WEIGHTS[comp] / total.where(total > 0)).mean()
                share = 0.0 if math.isnan(share) else float(share)
                ax.bar(x, share, width * 0.92, bottom=bottom, color=colour(c),
                       hatch=hatches[p % len(hatches)], edgecolor="white", linewidth=0.5,
                       label=comp if (p, t) == (0, 0) else None)
                bottom += share
            ax.plot([x - width * 0.45, x + width * 0.45], [rows["final"].mean()] * 2,
                    color="black", linewidth=1.5, label="mean final" if (p, t) == (0, 0) else None)
    ax.set_xticks(range(len(tasks)), [_short(t) for t in tasks], rotation=30, ha="right")
    ax.set_ylabel("weighted contribution to the score")
    ax.set_xlabel(_task_axis(tasks) + "; bars left to right: " + ", ".join(policies))
    ax.set_title(f"Score components\n{_sample_note(frame, policies, tasks)}")
    ax.set_ylim(0, 1.05)
    components = ax.legend(title="component", loc="upper left", bbox_to_anchor=(1.0, 1.0),
                           frameon=False)
    ax.add_artist(components)
    ax.legend([Patch(facecolor="#DDDDDD", edgecolor="black", hatch=hatches[p % len(hatches)])
               for p in range(len(policies))], policies, title="policy (hatch)",
              loc="lower left", bbox_to_anchor=(1.0, 0.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def resolved_rates(frame, *, policies: Sequence[str] | None = None):
    """Per policy, the share of episodes whose patch resolved full, partial or no (SWE-bench's
    meaning: every FAIL_TO_PASS and PASS_TO_PASS test passes, some do, none of the failing
    ones do) and of phase-2 episodes that proposed no patch, as stacked horizontal bars."""
    import numpy as np

    from srelib.analysis.behaviour import resolved_rates as rates_of

    policies = _levels(frame, "policy", policies)
    phase2 = frame[frame["mode"] != "p1_only"]
    rates = rates_of(frame).reindex(policies, fill_value=0.0)
    fig, ax = _figure(width=8.0, height=1.2 + 0.45 * len(policies))
    left = np.zeros(len(policies))
    for name, hue in RESOLVED.items():
        shares = rates[name].to_numpy()
        ax.barh(range(len(policies)), shares, left=left, color=hue, edgecolor="white",
                label=name)
        for y, (x, share) in enumerate(zip(left, shares)):
            if share >= 0.08:
                ax.text(x + share / 2, y, f"{share:.0%}", ha="center", va="center",
                        fontsize="small", color="white" if name != "no patch" else "black")
        left += shares
    ax.set_yticks(range(len(policies)), policies)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of episodes with a phase 2")
    ax.set_title(f"Did the patch resolve the issue?\n{_sample_note(phase2, policies)}")
    ax.legend(title="resolved", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def paired_difference(frame, policy_a: str, policy_b: str, value: str = "final", *,
                      seed: int = 0):
    """``policy_a - policy_b`` per task, paired on task, pool, mode and seed, as a point with
    its 95% bootstrap CI; the last row is all tasks together. Right of zero: A scored more."""
    from srelib.analysis.stats import paired_difference as table_of

    table = table_of(frame, policy_a, policy_b, value, seed=seed)
    order = {t: i for i, t in enumerate(_levels(frame, "task", None))}
    table = table.sort_values("task", key=lambda c: c.map(lambda t: order.get(t, len(order))))
    fig, ax = _figure(width=7.5, height=1.4 + 0.38 * len(table))
    ys = list(range(len(table)))
    colours = ["black" if t == "all" else policy_colours([policy_a, policy_b])[policy_a]
               for t in table["task"]]
    for y, (_, row), hue in zip(ys, table.iterrows(), colours):
        ax.errorbar([row["mean_diff"]], [y], xerr=[[row["mean_diff"] - row["ci_low"]],
                                                   [row["ci_high"] - row["mean_diff"]]],
                    fmt="o", color=hue, ecolor=hue, capsize=3, ms=6)
    ax.axvline(0, color="grey", linewidth=1)
    ax.set_yticks(ys, [("all tasks" if t == "all" else _short(t)) for t in table["task"]])
    ax.invert_yaxis()
    ax.set_xlabel(f"{_label(value)}: {policy_a} \u2212 {policy_b} (mean, 95% CI)")
    pairs = int(table.loc[table["task"] == "all", "n_pairs"].iloc[0])
    pools = sorted(str(p) for p in frame["pool"].dropna().unique())
    where = f"pool{'s' if len(pools) > 1 else ''} {', '.join(pools)}" if pools else "no pool"
    held_out = f" \u00b7 {HELD_OUT_NOTE}" if _has_held_out(table["task"]) else ""
    ax.set_title(f"{policy_a} \u2212 {policy_b}, paired on task, pool and seed\n"
                 f"n = {pairs} pairs \u00b7 {where}{held_out}")
    ax.grid(axis="x", alpha=0.3)
    return fig


def ceiling_gap(table, phase2: str | None = None):
    """Two panels from :func:`srelib.ceiling_table`: repair per handoff, and the gaps to oracle.

    Both panels carry the table's bootstrap confidence intervals as error bars. ``phase2``
    names the phase-2 policy in the title. A task whose oracle bar is 0 is marked: even a
    perfect handoff gives this policy no repair there (a revert, for one, deletes a file the
    hidden tests import), so its gaps say nothing about phase 1.
    """
    import numpy as np

    tasks = list(dict.fromkeys(table["task"]))
    handoffs = list(dict.fromkeys(table["handoff"]))
    colours = policy_colours(handoffs)
    fig, (left, right) = _figure(width=min(18.0, 2 * _width(len(tasks), len(handoffs)) - 2),
                                 height=4.8, ncols=2)
    width = 0.8 / len(handoffs)
    gapped = [h for h in handoffs if table.loc[table["handoff"] == h, "gap"].notna().any()]
    gap_width = 0.8 / max(1, len(gapped))
    for h, handoff in enumerate(handoffs):
        rows = table[table["handoff"] == handoff].set_index("task").reindex(tasks)
        xs = np.arange(len(tasks)) + (h - (len(handoffs) - 1) / 2) * width
        _bars_with_ci(left, xs, rows["repair"], rows["ci_low"], rows["ci_high"], width,
                      colours[handoff], handoff)
        if handoff in gapped:
            g = gapped.index(handoff)
            xs = np.arange(len(tasks)) + (g - (len(gapped) - 1) / 2) * gap_width
            _bars_with_ci(right, xs, rows["gap"], rows["gap_low"], rows["gap_high"], gap_width,
                          colours[handoff], f"oracle - {handoff}")
    oracle = table[table["handoff"] == "oracle"].set_index("task")["repair"]
    blocked = [t for t in tasks if t in oracle and oracle[t] == 0]
    for t in blocked:
        left.annotate("oracle 0 *", (tasks.index(t), 0.0), xytext=(0, 4),
                      textcoords="offset points", ha="center", fontsize="x-small", rotation=90)
    who = phase2 or "the phase-2 policy"
    n = _n_range(table["n"]) if "n" in table else "?"
    for ax, ylabel, title in ((left, "phase-2 repair score", f"Repair of {who} under each handoff"),
                              (right, "repair gap to the oracle handoff", "Oracle-P1 ceiling gap")):
        ax.set_xticks(range(len(tasks)), [_short(t) for t in tasks], rotation=30, ha="right")
        ax.set_xlabel(_task_axis(tasks))
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}\nn = {n} seeds per task and handoff, joint episodes")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(frameon=False, fontsize="small")
    if blocked:
        fig.supxlabel(f"* oracle 0: even the true handoff leaves {who} no repair on this task "
                      "(a revert deletes a file\nthe hidden tests need), so its gaps say "
                      "nothing about phase 1", fontsize="small")
    return fig


def localisation_vs_score(frame, value: str = "final", *,
                          policies: Sequence[str] | None = None, jitter_seed: int = 0):
    """Localisation against ``value``, one point per episode and one colour per policy.

    Two panels: phase-1 localisation (``1 / culprit_rank``) and phase-2 localisation (the share
    of bad commit diffed, bad file read, bad file edited, bad function edited), from
    :func:`srelib.results.localisation.localisation_scores`; points are jittered a little so equal
    episodes stay visible. Two agents that both fail to repair part here when one found the
    bad code and the other never opened it.
    """
    import numpy as np

    from srelib.results.localisation import localisation_scores

    policies = _levels(frame, "policy", policies)
    colours = policy_colours(policies)
    scores = localisation_scores(frame)
    rng = np.random.default_rng(jitter_seed)
    fig, axes = _figure(width=11.0, height=4.6, ncols=2)
    labels = {"phase1": "phase-1 localisation (1 / culprit's rank among services checked)",
              "phase2": "phase-2 localisation (share of commit, file read, file edited, "
                        "function edited)"}
    for ax, phase in zip(axes, ("phase1", "phase2")):
        for policy in policies:
            rows = (frame["policy"] == policy) & scores[phase].notna() & frame[value].notna()
            x, y = scores.loc[rows, phase].to_numpy(float), frame.loc[rows, value].to_numpy(float)
            ax.scatter(x + rng.uniform(-0.02, 0.02, x.size), y + rng.uniform(-0.01, 0.01, y.size),
                       s=14, alpha=0.6, color=colours[policy], label=f"{policy} ({x.size})")
        ax.set_xlim(-0.06, 1.06)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel(labels[phase], fontsize="small")
        ax.set_ylabel(_label(value))
        ax.grid(alpha=0.3)
    axes[0].set_title("Phase 1: how soon the culprit was checked")
    axes[1].set_title("Phase 2: how close the agent came to the bad code")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, title="policy (episodes)", loc="outside right upper",
               frameon=False)
    fig.suptitle(f"Localisation against {_label(value)}, one point per episode\n"
                 f"{_sample_note(frame, policies)}")
    return fig


def repair_ladder(table):
    """The repair ladder from :func:`srelib.analysis.ceiling.summarize_ladder`: the share repaired in full
    per rung (bars, bootstrap CIs), one panel per suite, each real policy's share as a
    horizontal line placed on the ladder."""
    import numpy as np

    suites = list(dict.fromkeys(table["suite"]))
    fig, axes = _figure(width=min(18.0, 4.6 * len(suites) + 2), height=4.6, ncols=len(suites))
    axes = np.atleast_1d(axes)
    others = list(dict.fromkeys(table.loc[table["kind"] != "rung", "policy"]))
    colours = policy_colours(others)
    for ax, suite in zip(axes, suites):
        rows = table[table["suite"] == suite]
        rungs = rows[rows["kind"] == "rung"]
        xs = np.arange(len(rungs))
        _bars_with_ci(ax, xs, rungs["full"], rungs["full_low"], rungs["full_high"], 0.8,
                      "#BBBBBB", None)
        for _, row in rows[rows["kind"] != "rung"].iterrows():
            ax.axhline(row["full"], color=colours[row["policy"]], linewidth=2,
                       linestyle="--" if row["kind"] == "joint" else "-",
                       label=f"{row['policy']} ({row['kind']})")
        ax.set_xticks(xs, [f"+ {p.removeprefix('rung:')}" if i else "oracle belief"
                           for i, p in enumerate(rungs["policy"])], rotation=30, ha="right")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("share repaired in full")
        ax.set_title(f"{suite}\nn = {_n_range(rows['n'])} episodes per bar or line")
        ax.grid(axis="y", alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="outside right upper", frameon=False, fontsize="small")
    fig.suptitle("Repair ladder: each rung knows one more piece of the answer")
    return fig


def steps_per_phase(frame, *, policies: Sequence[str] | None = None,
                    tasks: Sequence[str] | None = None):
    """Mean steps per episode, phase 1 (solid) stacked under phase 2 (hatched), per task and policy."""
    from matplotlib.patches import Patch

    policies, tasks = _levels(frame, "policy", policies), _levels(frame, "task", tasks)
    colours = policy_colours(policies)
    fig, ax = _figure(width=_width(len(tasks), len(policies)), height=4.8)
    width = 0.8 / len(policies)
    for p, policy in enumerate(policies):
        for t, task in enumerate(tasks):
            rows = frame[(frame["policy"] == policy) & (frame["task"] == task)]
            if rows.empty:
                continue
            x = t + (p - (len(policies) - 1) / 2) * width
            p1, p2 = rows["p1_steps"].mean(), rows["p2_steps"].mean()
            first = t == 0
            ax.bar(x, p1, width * 0.92, color=colours[policy], edgecolor="white",
                   label=policy if first else None)
            ax.bar(x, p2, width * 0.92, bottom=p1, color=colours[policy], alpha=0.55,
                   hatch="//", edgecolor="white")
    ax.set_xticks(range(len(tasks)), [_short(t) for t in tasks], rotation=30, ha="right")
    ax.set_xlabel(_task_axis(tasks))
    ax.set_ylabel("mean steps per episode")
    ax.set_title(f"Steps per phase\n{_sample_note(frame, policies, tasks)}")
    handles, labels = ax.get_legend_handles_labels()
    handles += [Patch(facecolor="grey"), Patch(facecolor="grey", alpha=0.55, hatch="//")]
    labels += ["phase 1 (solid)", "phase 2 (hatched)"]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def parse_failure_rate(frame, *, policies: Sequence[str] | None = None, seed: int = 0):
    """Parse failures per step for each policy, with a bootstrap CI over episodes.

    Only model-driven policies can fail to parse: see :func:`has_parse_failures` before
    drawing it for a run of scripted policies.
    """
    import numpy as np

    from srelib.analysis.stats import bootstrap_ci

    policies = _levels(frame, "policy", policies)
    colours = policy_colours(policies)
    fig, ax = _figure(width=max(5.0, 0.9 * len(policies) + 2), height=3.8)
    for p, policy in enumerate(policies):
        rows = frame[frame["policy"] == policy]
        steps = (rows["p1_steps"] + rows["p2_steps"]).clip(lower=1)
        mean, low, high = bootstrap_ci(rows["parse_failures"] / steps, seed=seed)
        _bars_with_ci(ax, np.array([p]), [mean], [low], [high], 0.7, colours[policy], None)
    ax.set_xticks(range(len(policies)), policies, rotation=20, ha="right")
    ax.set_xlabel("policy")
    ax.set_ylabel("parse failures per step")
    ax.set_title(f"Unparsable replies (95% CI)\n{_sample_note(frame, policies)}")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    return fig


def has_parse_failures(frame) -> bool:
    """Whether any episode of ``frame`` had an unparsable reply (scripted policies never do)."""
    return bool(frame["parse_failures"].fillna(0).sum() > 0)


def _sample_note(frame, policies: Sequence[str], tasks: Sequence[str] | None = None) -> str:
    """``n = 4 episodes per policy and task · pool C`` for a title."""
    rows = frame[frame["policy"].isin(policies)]
    if tasks is not None:
        rows = rows[rows["task"].isin(tasks)]
    counts = rows.groupby(["policy", "task"] if tasks is not None else ["policy"]).size()
    unit = "per policy and task" if tasks is not None else "per policy"
    pools = sorted(str(p) for p in rows["pool"].dropna().unique())
    where = f"pool{'s' if len(pools) > 1 else ''} {', '.join(pools)}" if pools else "no pool"
    return f"n = {_n_range(counts)} episodes {unit} \u00b7 {where}"


def _n_range(counts) -> str:
    low, high = (int(counts.min()), int(counts.max())) if len(counts) else (0, 0)
    return f"{low}" if low == high else f"{low}\u2013{high}"


def _task_axis(tasks: Sequence[str]) -> str:
    """The task axis label, explaining the held-out prefix when a held-out task is shown."""
    return f"task ({HELD_OUT_NOTE})" if _has_held_out(tasks) else "task"


def _has_held_out(tasks: Sequence[str]) -> bool:
    return any(str(t).startswith("heldout_") for t in tasks)


def _width(groups: int, per_group: int) -> float:
    """A figure width in inches that keeps bars readable without growing past a screen."""
    return min(16.0, max(6.0, 0.5 * groups * max(1, per_group) ** 0.5 + 3.5))


def _figure(width: float, height: float, ncols: int = 1):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=True)
    return fig, axes


def _ecdf_panels(frame, value, policies, tasks, title):
    import numpy as np
    from matplotlib.figure import Figure

    ncols = min(5, len(tasks))
    nrows = math.ceil(len(tasks) / ncols)
    fig = Figure(figsize=(2.8 * ncols + 1.5, 2.4 * nrows + 0.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)).ravel()
    colours = policy_colours(policies)
    for ax, task in zip(axes, tasks):
        for policy in policies:
            vals = np.sort(_values(frame, value, policy=policy, task=task))
            if vals.size:
                ax.step(np.concatenate([[vals[0]], vals]),
                        np.arange(vals.size + 1) / vals.size, where="post",
                        color=colours[policy], label=policy)
        ax.set_title(_short(task), fontsize="medium")
        ax.grid(alpha=0.3)
    for ax in axes[len(tasks):]:
        ax.set_visible(False)
    for ax in axes[::ncols]:
        ax.set_ylabel("fraction of episodes")
    for ax in axes[(nrows - 1) * ncols:]:
        ax.set_xlabel(_label(value))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="policy", loc="outside right upper", frameon=False)
    held_out = f" \u00b7 {HELD_OUT_NOTE}" if _has_held_out(tasks) else ""
    fig.suptitle(title or f"ECDF of {_label(value)} per task\n"
                 f"{_sample_note(frame, policies, tasks)}{held_out}")
    return fig


def _draw_bodies(ax, samples, centres, width, color, kind):
    import numpy as np

    if kind == "box":
        box = ax.boxplot(samples, positions=centres, widths=width, patch_artist=True,
                         showfliers=False, manage_ticks=False)
        for patch in box["boxes"]:
            patch.set(facecolor=color, alpha=0.35, edgecolor=color)
        for part in ("medians", "whiskers", "caps"):
            for line in box[part]:
                line.set(color=color)
        return
    spread = [(x, v) for x, v in zip(centres, samples) if np.ptp(v) > 0]
    for x, v in zip(centres, samples):
        if np.ptp(v) == 0:  # a violin of identical values is a line
            ax.plot([x - width / 2, x + width / 2], [v[0], v[0]], color=color, linewidth=2)
    if spread:
        parts = ax.violinplot([v for _, v in spread], positions=[x for x, _ in spread],
                              widths=width, showextrema=False, showmedians=True)
        for body in parts["bodies"]:
            body.set(facecolor=color, edgecolor=color, alpha=0.3)
        parts["cmedians"].set(color=color)


def _bars_with_ci(ax, xs, means, lows, highs, width, color, label):
    import numpy as np

    means, lows, highs = (np.asarray(a, dtype=float) for a in (means, lows, highs))
    err = np.vstack([np.clip(means - lows, 0, None), np.clip(highs - means, 0, None)])
    ax.bar(xs, np.nan_to_num(means), width * 0.92, color=color, label=label,
           yerr=np.nan_to_num(err), capsize=3, error_kw={"elinewidth": 1, "ecolor": "black"})


def _values(frame, value, *, policy, task):
    sel = frame[(frame["policy"] == policy) & (frame["task"] == task)][value]
    return sel.dropna().to_numpy(dtype=float)


def _levels(frame, column, chosen):
    present = list(dict.fromkeys(frame[column].dropna()))
    if column == "task":
        from srelib.env.scenarios import TASKS

        order = {t: i for i, t in enumerate(TASKS)}
        present.sort(key=lambda t: order.get(t, len(order)))
    if chosen is None:
        return present
    missing = [c for c in chosen if c not in present]
    if missing:
        raise ValueError(f"{column} values {missing} are not in the frame; present: {present}")
    return list(chosen)


def _short(task: str) -> str:
    return task.replace("heldout_", "h/").replace("_", " ")


def _label(value: str) -> str:
    return {"final": "final score", "r_cross": "r_cross"}.get(value, value.replace("_", " "))
