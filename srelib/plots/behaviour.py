"""Plots of the behaviour metrics in :mod:`srelib.analysis.behaviour`, one function per metric.

Each takes the table its metric returns and gives back a matplotlib ``Figure``; a policy keeps
its colour from :func:`srelib.plots.style.colour` in every plot, in the order the table lists it.
"""

from __future__ import annotations

from srelib.extras import require

def stopping(distribution, kl=None):
    """Grouped bars: per phase-1 length bucket, the share of each policy's episodes; the title
    gives the largest pairwise KL when ``kl`` (from ``stopping_kl``) is passed."""
    fig, ax = _figure(max(6.0, 0.9 * distribution.shape[1] + 2), 3.6)
    policies = list(distribution.index)
    width = 0.8 / max(1, len(policies))
    for i, policy in enumerate(policies):
        xs = [b + (i - (len(policies) - 1) / 2) * width for b in range(distribution.shape[1])]
        ax.bar(xs, distribution.loc[policy], width, color=_colour(i), label=policy)
    ax.set_xticks(range(distribution.shape[1]), list(distribution.columns))
    ax.set_xlabel("phase-1 steps before the handoff")
    ax.set_ylabel("share of episodes")
    title = "When phase 1 stops"
    if kl is not None and len(kl) > 1:
        title += f" (largest pairwise KL {kl.to_numpy().max():.2f} nats)"
    ax.set_title(title)
    ax.legend(frameon=False, fontsize=8)
    return fig


def first_positions(table):
    """Per action type (rows), the mean position of its first use, one marker per policy; the
    marker's area is the share of episodes that used it."""
    actions = list(dict.fromkeys(table.sort_values("mean_position")["action_type"]))
    fig, ax = _figure(7.0, 0.35 * len(actions) + 1.5)
    for i, (policy, group) in enumerate(table.groupby("policy", sort=False)):
        rows = group.set_index("action_type")
        ys = [actions.index(a) for a in rows.index]
        ax.scatter(rows["mean_position"], ys, s=20 + 120 * rows["share"], color=_colour(i),
                   alpha=0.8, label=policy)
    ax.set_yticks(range(len(actions)), actions)
    ax.invert_yaxis()
    ax.set_xlabel("mean step of first use (marker area: share of episodes using it)")
    ax.set_title("The order policies act in")
    ax.legend(frameon=False, fontsize=8)
    return fig


def reliability(points, ece):
    """The reliability diagram: accuracy against mean confidence per bucket, per policy, with
    each policy's ECE in the legend; the diagonal is perfect calibration."""
    fig, ax = _figure(4.8, 4.4)
    ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="calibrated")
    scores = dict(zip(ece["policy"], ece["ece"]))
    for i, (policy, group) in enumerate(points.groupby("policy", sort=False)):
        ax.plot(group["confidence"], group["accuracy"], marker="o", color=_colour(i),
                label=f"{policy} (ECE {scores.get(policy, float('nan')):.2f})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("handed-over service confidence")
    ax.set_ylabel("share with the right service")
    ax.set_title("Calibration of the handoff")
    ax.legend(frameon=False, fontsize=8)
    return fig


def search_breadth(breadth, correlation=None):
    """Phase-2 search breadth against the handed-over fault confidence, one colour per policy
    (Pearson r in the legend when ``correlation`` is passed)."""
    fig, ax = _figure(5.6, 4.0)
    rs = {} if correlation is None else dict(zip(correlation["policy"], correlation["pearson_r"]))
    for i, (policy, group) in enumerate(breadth.groupby("policy", sort=False)):
        label = policy if policy not in rs else f"{policy} (r = {rs[policy]:.2f})"
        ax.scatter(group["fault_confidence"], group["breadth"], color=_colour(i), alpha=0.6,
                   label=label)
    ax.set_xlabel("handed-over fault confidence")
    ax.set_ylabel("distinct phase-2 search actions")
    ax.set_title("Does doubt widen the search?")
    ax.legend(frameon=False, fontsize=8)
    return fig


def harmful(table):
    """Horizontal bars: how often each policy took each harmful action."""
    labels = [f"{p}: {a}" for p, a in zip(table["policy"], table["action"])]
    fig, ax = _figure(6.0, 0.3 * max(1, len(labels)) + 1.5)
    order = {p: i for i, p in enumerate(dict.fromkeys(table["policy"]))}
    ax.barh(labels, table["count"], color=[_colour(order[p]) for p in table["policy"]])
    ax.invert_yaxis()
    ax.set_xlabel("times taken")
    ax.set_title("Actions that harmed" if labels else "No harmful actions")
    return fig


def _colour(index: int) -> str:
    from srelib.plots.style import colour

    return colour(index)


def _figure(width: float, height: float):
    require("matplotlib", "srelib.plots.behaviour")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots()
