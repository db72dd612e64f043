"""Plots of evaluation frames: score distributions, components, ceiling gaps, steps, parse failures.

Every function takes a results frame (or a ceiling table) and returns a
``matplotlib.figure.Figure``. Figures are built without pyplot, so nothing needs a display and
nothing is shown twice in a notebook: the returned Figure renders inline, and
``fig.savefig("x.png")`` writes a PNG through the Agg canvas on any machine. Colours come from
the Okabe-Ito palette, which stays distinguishable under the common colour-vision deficiencies.
"""

from __future__ import annotations

import math
from typing import Sequence

#: Okabe & Ito (2008), ordered so that the first colours contrast best on white.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2", "#CC79A7", "#F0E442",
             "#000000")
KINDS = ("violin", "box", "ecdf")
#: Columns that hold scores in [0, 1]; their axes always span the whole range.
SCORE_COLUMNS = ("final", "diagnosis", "mitigation", "repair", "efficiency", "r_cross")


def colour(index: int) -> str:
    """The ``index``-th palette colour (cycling)."""
    return OKABE_ITO[index % len(OKABE_ITO)]


def score_distributions(frame, value: str = "final", *, kind: str = "violin",
                        policies: Sequence[str] | None = None, tasks: Sequence[str] | None = None,
                        jitter_seed: int = 0, title: str | None = None):
    """The distribution of ``value`` per task, one colour per policy.

    ``kind="violin"`` or ``"box"`` draws one axes with tasks along x and each policy's episodes
    as a violin (or box) plus jittered points; ``kind="ecdf"`` draws one small ECDF panel per task.
    """
    import numpy as np

    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; valid kinds: {list(KINDS)}")
    policies, tasks = _levels(frame, "policy", policies), _levels(frame, "task", tasks)
    if kind == "ecdf":
        return _ecdf_panels(frame, value, policies, tasks, title)
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
        _draw_bodies(ax, samples, centres, width * 0.9, colour(p), kind)
        for x, vals in zip(centres, samples):
            jitter = rng.uniform(-width * 0.3, width * 0.3, size=vals.size)
            ax.scatter(x + jitter, vals, s=9, color=colour(p), edgecolors="white",
                       linewidths=0.3, alpha=0.8, zorder=3,
                       label=policy if x == centres[0] else None)
    ax.set_xticks(range(len(tasks)), [_short(t) for t in tasks], rotation=30, ha="right")
    ax.set_xlim(-0.6, len(tasks) - 0.4)
    ax.set_xlabel("task")
    ax.set_ylabel(_label(value))
    if value in SCORE_COLUMNS:
        ax.set_ylim(-0.03, 1.03)
    ax.set_title(title or f"{_label(value)} per task ({kind}, one point per episode)")
    ax.legend(title="policy", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def component_breakdown(frame, *, policies: Sequence[str] | None = None,
                        tasks: Sequence[str] | None = None):
    """Stacked bars of each component's weighted contribution, per task and policy.

    A contribution is the component's mean times its weight, renormalised over the components
    counted in that episode's mode; a black tick marks the mean final score for comparison.
    """
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
    ax.set_xlabel("task (bars left to right: " + ", ".join(policies) + ")")
    ax.set_title("Score components")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def ceiling_gap(table):
    """Two panels from :func:`srelib.ceiling_table`: repair per handoff, and the gaps to oracle.

    Both panels carry the table's bootstrap confidence intervals as error bars.
    """
    import numpy as np

    tasks = list(dict.fromkeys(table["task"]))
    handoffs = list(dict.fromkeys(table["handoff"]))
    fig, (left, right) = _figure(width=min(18.0, 2 * _width(len(tasks), len(handoffs)) - 2),
                                 height=4.8, ncols=2)
    width = 0.8 / len(handoffs)
    gapped = [h for h in handoffs if table.loc[table["handoff"] == h, "gap"].notna().any()]
    gap_width = 0.8 / max(1, len(gapped))
    for h, handoff in enumerate(handoffs):
        rows = table[table["handoff"] == handoff].set_index("task").reindex(tasks)
        xs = np.arange(len(tasks)) + (h - (len(handoffs) - 1) / 2) * width
        _bars_with_ci(left, xs, rows["repair"], rows["ci_low"], rows["ci_high"], width,
                      colour(h), handoff)
        if handoff in gapped:
            g = gapped.index(handoff)
            xs = np.arange(len(tasks)) + (g - (len(gapped) - 1) / 2) * gap_width
            _bars_with_ci(right, xs, rows["gap"], rows["gap_low"], rows["gap_high"], gap_width,
                          colour(h), f"oracle - {handoff}")
    for ax, ylabel, title in ((left, "phase-2 repair score", "Repair under each handoff"),
                              (right, "repair gap to the oracle handoff", "Oracle-P1 ceiling gap")):
        ax.set_xticks(range(len(tasks)), [_short(t) for t in tasks], rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(frameon=False, fontsize="small")
    return fig


def steps_per_phase(frame, *, policies: Sequence[str] | None = None,
                    tasks: Sequence[str] | None = None):
    """Mean steps per episode, phase 1 (solid) stacked under phase 2 (hatched), per task and policy."""
    from matplotlib.patches import Patch

    policies, tasks = _levels(frame, "policy", policies), _levels(frame, "task", tasks)
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
            ax.bar(x, p1, width * 0.92, color=colour(p), edgecolor="white",
                   label=policy if first else None)
            ax.bar(x, p2, width * 0.92, bottom=p1, color=colour(p), alpha=0.55, hatch="//",
                   edgecolor="white")
    ax.set_xticks(range(len(tasks)), [_short(t) for t in tasks], rotation=30, ha="right")
    ax.set_xlabel("task")
    ax.set_ylabel("mean steps per episode")
    ax.set_title("Steps per phase")
    handles, labels = ax.get_legend_handles_labels()
    handles += [Patch(facecolor="grey"), Patch(facecolor="grey", alpha=0.55, hatch="//")]
    labels += ["phase 1 (solid)", "phase 2 (hatched)"]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def parse_failure_rate(frame, *, policies: Sequence[str] | None = None, seed: int = 0):
    """Parse failures per step for each policy, with a bootstrap CI over episodes."""
    import numpy as np

    from srelib.stats import bootstrap_ci

    policies = _levels(frame, "policy", policies)
    fig, ax = _figure(width=max(5.0, 0.9 * len(policies) + 2), height=3.8)
    for p, policy in enumerate(policies):
        rows = frame[frame["policy"] == policy]
        steps = (rows["p1_steps"] + rows["p2_steps"]).clip(lower=1)
        mean, low, high = bootstrap_ci(rows["parse_failures"] / steps, seed=seed)
        _bars_with_ci(ax, np.array([p]), [mean], [low], [high], 0.7, colour(p), None)
    ax.set_xticks(range(len(policies)), policies, rotation=20, ha="right")
    ax.set_xlabel("policy")
    ax.set_ylabel("parse failures per step")
    ax.set_title("Unparsable replies (95% CI)")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    return fig


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
    fig = Figure(figsize=(2.8 * ncols + 1.5, 2.4 * nrows + 0.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)).ravel()
    for ax, task in zip(axes, tasks):
        for p, policy in enumerate(policies):
            vals = np.sort(_values(frame, value, policy=policy, task=task))
            if vals.size:
                ax.step(np.concatenate([[vals[0]], vals]),
                        np.arange(vals.size + 1) / vals.size, where="post", color=colour(p),
                        label=policy)
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
    fig.suptitle(title or f"ECDF of {_label(value)} per task")
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
