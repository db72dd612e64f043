"""Plots of scores: their distribution per task and policy (violin, box or ECDF), each
component's weighted share, and the paired difference between two policies."""

from __future__ import annotations

import math
from typing import Sequence

from srelib.extras import require
from srelib.plots.axes import (figure, figure_width, has_held_out, levels, sample_note, short_task,
                               task_axis, value_label, values_of)
from srelib.plots.style import HELD_OUT_NOTE, colour, policy_colours
from srelib.results.store import COMPONENTS

KINDS = ("violin", "box", "ecdf")
#: Columns that hold scores in [0, 1]; their axes always span the whole range.
SCORE_COLUMNS = ("final", *COMPONENTS, "r_cross")


def score_distributions(frame, value: str = "final", *, kind: str = "violin",
                        policies: Sequence[str] | None = None, tasks: Sequence[str] | None = None,
                        jitter_seed: int = 0, title: str | None = None):
    """The distribution of ``value`` per task, one colour per policy.

    ``kind="violin"`` or ``"box"`` draws one axes with tasks along x and each policy's episodes
    as a violin (or box) plus jittered points, and a white diamond at the mean with its 95%
    bootstrap CI; ``kind="ecdf"`` draws one small ECDF panel per task.

    Args:
        frame: A results frame (:func:`srelib.load_run`).
        value: The column whose distribution is drawn.
        kind: ``"violin"``, ``"box"`` or ``"ecdf"``.
        policies: The policies to draw, in this order (None: those the frame holds, as they come).
        tasks: The tasks to draw, in this order (None: those the frame holds, in TASKS order).
        jitter_seed: The seed of the points' jitter.
        title: The figure's title (None: one made from ``value``).

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: ``kind`` is none of these.
    """
    require("numpy", "srelib.plots.scores")
    import numpy as np
    require("matplotlib", "srelib.plots.scores")
    from matplotlib.lines import Line2D

    from srelib.analysis.stats import bootstrap_ci

    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; valid kinds: {list(KINDS)}")
    policies, tasks = levels(frame, "policy", policies), levels(frame, "task", tasks)
    if kind == "ecdf":
        return _ecdf_panels(frame, value, policies, tasks, title)
    colours = policy_colours(policies)
    fig, ax = figure(width=figure_width(len(tasks), len(policies)), height=4.8)
    rng = np.random.default_rng(jitter_seed)
    width = 0.8 / len(policies)
    for p, policy in enumerate(policies):
        centres, samples = [], []
        for t, task in enumerate(tasks):
            vals = values_of(frame, value, policy=policy, task=task)
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
    ax.set_xticks(range(len(tasks)), [short_task(t) for t in tasks], rotation=30, ha="right")
    ax.set_xlim(-0.6, len(tasks) - 0.4)
    ax.set_xlabel(task_axis(tasks))
    ax.set_ylabel(value_label(value))
    if value in SCORE_COLUMNS:
        ax.set_ylim(-0.03, 1.03)
    ax.set_title(title or f"{value_label(value)} per task ({kind}, one point per episode)\n"
                 f"{sample_note(frame, policies, tasks)}")
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

    Args:
        frame: A results frame (:func:`srelib.load_run`).
        policies: The policies to draw, in this order (None: those the frame holds, as they come).
        tasks: The tasks to draw, in this order (None: those the frame holds, in TASKS order).

    Returns:
        The matplotlib Figure.
    """
    require("matplotlib", "srelib.plots.scores")
    from matplotlib.patches import Patch

    from srelib.env.grading.score import WEIGHTS

    policies, tasks = levels(frame, "policy", policies), levels(frame, "task", tasks)
    comps = [c for c in WEIGHTS if c in frame.columns]
    fig, ax = figure(width=figure_width(len(tasks), len(policies)), height=4.8)
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
    ax.set_xticks(range(len(tasks)), [short_task(t) for t in tasks], rotation=30, ha="right")
    ax.set_ylabel("weighted contribution to the score")
    ax.set_xlabel(task_axis(tasks) + "; bars left to right: " + ", ".join(policies))
    ax.set_title(f"Score components\n{sample_note(frame, policies, tasks)}")
    ax.set_ylim(0, 1.05)
    components = ax.legend(title="component", loc="upper left", bbox_to_anchor=(1.0, 1.0),
                           frameon=False)
    ax.add_artist(components)
    ax.legend([Patch(facecolor="#DDDDDD", edgecolor="black", hatch=hatches[p % len(hatches)])
               for p in range(len(policies))], policies, title="policy (hatch)",
              loc="lower left", bbox_to_anchor=(1.0, 0.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def paired_difference(frame, policy_a: str, policy_b: str, value: str = "final", *,
                      seed: int = 0):
    """``policy_a - policy_b`` per task, paired on task, pool, mode and seed, as a point with
    its 95% bootstrap CI; the last row is all tasks together. Right of zero: A scored more.

    Args:
        frame: A results frame (:func:`srelib.load_run`).
        policy_a: The policy whose score is subtracted from.
        policy_b: The policy whose score is subtracted.
        value: The column compared.
        seed: The bootstrap's seed.

    Returns:
        The matplotlib Figure.
    """
    from srelib.analysis.stats import paired_difference as table_of

    table = table_of(frame, policy_a, policy_b, value, seed=seed)
    order = {t: i for i, t in enumerate(levels(frame, "task", None))}
    table = table.sort_values("task", key=lambda c: c.map(lambda t: order.get(t, len(order))))
    fig, ax = figure(width=7.5, height=1.4 + 0.38 * len(table))
    ys = list(range(len(table)))
    colours = ["black" if t == "all" else policy_colours([policy_a, policy_b])[policy_a]
               for t in table["task"]]
    for y, (_, row), hue in zip(ys, table.iterrows(), colours):
        ax.errorbar([row["mean_diff"]], [y], xerr=[[row["mean_diff"] - row["ci_low"]],
                                                   [row["ci_high"] - row["mean_diff"]]],
                    fmt="o", color=hue, ecolor=hue, capsize=3, ms=6)
    ax.axvline(0, color="grey", linewidth=1)
    ax.set_yticks(ys, [("all tasks" if t == "all" else short_task(t)) for t in table["task"]])
    ax.invert_yaxis()
    ax.set_xlabel(f"{value_label(value)}: {policy_a} \u2212 {policy_b} (mean, 95% CI)")
    pairs = int(table.loc[table["task"] == "all", "n_pairs"].iloc[0])
    pools = sorted(str(p) for p in frame["pool"].dropna().unique())
    where = f"pool{'s' if len(pools) > 1 else ''} {', '.join(pools)}" if pools else "no pool"
    held_out = f" \u00b7 {HELD_OUT_NOTE}" if has_held_out(table["task"]) else ""
    ax.set_title(f"{policy_a} \u2212 {policy_b}, paired on task, pool and seed\n"
                 f"n = {pairs} pairs \u00b7 {where}{held_out}")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _ecdf_panels(frame, value, policies, tasks, title):
    require("numpy", "srelib.plots.scores")
    import numpy as np
    require("matplotlib", "srelib.plots.scores")
    from matplotlib.figure import Figure

    ncols = min(5, len(tasks))
    nrows = math.ceil(len(tasks) / ncols)
    fig = Figure(figsize=(2.8 * ncols + 1.5, 2.4 * nrows + 0.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)).ravel()
    colours = policy_colours(policies)
    for ax, task in zip(axes, tasks):
        for policy in policies:
            vals = np.sort(values_of(frame, value, policy=policy, task=task))
            if vals.size:
                ax.step(np.concatenate([[vals[0]], vals]),
                        np.arange(vals.size + 1) / vals.size, where="post",
                        color=colours[policy], label=policy)
        ax.set_title(short_task(task), fontsize="medium")
        ax.grid(alpha=0.3)
    for ax in axes[len(tasks):]:
        ax.set_visible(False)
    for ax in axes[::ncols]:
        ax.set_ylabel("fraction of episodes")
    for ax in axes[(nrows - 1) * ncols:]:
        ax.set_xlabel(value_label(value))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="policy", loc="outside right upper", frameon=False)
    held_out = f" \u00b7 {HELD_OUT_NOTE}" if has_held_out(tasks) else ""
    fig.suptitle(title or f"ECDF of {value_label(value)} per task\n"
                 f"{sample_note(frame, policies, tasks)}{held_out}")
    return fig


def _draw_bodies(ax, samples, centres, width, color, kind):
    require("numpy", "srelib.plots.scores")
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
