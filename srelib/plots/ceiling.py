"""Plots of the oracle-P1 ceiling: repair under each handoff with the gaps to the oracle, and the
repair ladder."""

from __future__ import annotations

from srelib.extras import require
from srelib.plots.axes import bars_with_ci, figure, figure_width, n_range, short_task, task_axis
from srelib.plots.style import policy_colours


def ceiling_gap(table, phase2: str | None = None):
    """Two panels from :func:`srelib.ceiling_table`: repair per handoff, and the gaps to oracle.

    Both panels carry the table's bootstrap confidence intervals as error bars. ``phase2``
    names the phase-2 policy in the title. A task whose oracle bar is 0 is marked: even a
    perfect handoff gives this policy no repair there (a revert, for one, deletes a file the
    hidden tests import), so its gaps say nothing about phase 1.

    Args:
        table: The frame :func:`srelib.ceiling_table` returns.
        phase2: The phase-2 policy's name, for the title (None: no name).

    Returns:
        The matplotlib Figure.
    """
    require("numpy", "srelib.plots.ceiling")
    import numpy as np

    tasks = list(dict.fromkeys(table["task"]))
    handoffs = list(dict.fromkeys(table["handoff"]))
    colours = policy_colours(handoffs)
    fig, (left, right) = figure(width=min(18.0, 2 * figure_width(len(tasks), len(handoffs)) - 2),
                                 height=4.8, ncols=2)
    width = 0.8 / len(handoffs)
    gapped = [h for h in handoffs if table.loc[table["handoff"] == h, "gap"].notna().any()]
    gap_width = 0.8 / max(1, len(gapped))
    for h, handoff in enumerate(handoffs):
        rows = table[table["handoff"] == handoff].set_index("task").reindex(tasks)
        xs = np.arange(len(tasks)) + (h - (len(handoffs) - 1) / 2) * width
        bars_with_ci(left, xs, rows["repair"], rows["ci_low"], rows["ci_high"], width,
                      colours[handoff], handoff)
        if handoff in gapped:
            g = gapped.index(handoff)
            xs = np.arange(len(tasks)) + (g - (len(gapped) - 1) / 2) * gap_width
            bars_with_ci(right, xs, rows["gap"], rows["gap_low"], rows["gap_high"], gap_width,
                          colours[handoff], f"oracle - {handoff}")
    oracle = table[table["handoff"] == "oracle"].set_index("task")["repair"]
    blocked = [t for t in tasks if t in oracle and oracle[t] == 0]
    for t in blocked:
        left.annotate("oracle 0 *", (tasks.index(t), 0.0), xytext=(0, 4),
                      textcoords="offset points", ha="center", fontsize="x-small", rotation=90)
    who = phase2 or "the phase-2 policy"
    n = n_range(table["n"]) if "n" in table else "?"
    for ax, ylabel, title in ((left, "phase-2 repair score", f"Repair of {who} under each handoff"),
                              (right, "repair gap to the oracle handoff", "Oracle-P1 ceiling gap")):
        ax.set_xticks(range(len(tasks)), [short_task(t) for t in tasks], rotation=30, ha="right")
        ax.set_xlabel(task_axis(tasks))
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


def repair_ladder(table):
    """The repair ladder from :func:`srelib.analysis.ceiling.summarize_ladder`: the share repaired in full
    per rung (bars, bootstrap CIs), one panel per suite, each real policy's share as a
    horizontal line placed on the ladder.

    Args:
        table: The frame :func:`srelib.analysis.ceiling.summarize_ladder` returns.

    Returns:
        The matplotlib Figure.
    """
    require("numpy", "srelib.plots.ceiling")
    import numpy as np

    suites = list(dict.fromkeys(table["suite"]))
    fig, axes = figure(width=min(18.0, 4.6 * len(suites) + 2), height=4.6, ncols=len(suites))
    axes = np.atleast_1d(axes)
    others = list(dict.fromkeys(table.loc[table["kind"] != "rung", "policy"]))
    colours = policy_colours(others)
    for ax, suite in zip(axes, suites):
        rows = table[table["suite"] == suite]
        rungs = rows[rows["kind"] == "rung"]
        xs = np.arange(len(rungs))
        bars_with_ci(ax, xs, rungs["full"], rungs["full_low"], rungs["full_high"], 0.8,
                      "#BBBBBB", None)
        for _, row in rows[rows["kind"] != "rung"].iterrows():
            ax.axhline(row["full"], color=colours[row["policy"]], linewidth=2,
                       linestyle="--" if row["kind"] == "joint" else "-",
                       label=f"{row['policy']} ({row['kind']})")
        ax.set_xticks(xs, [f"+ {p.removeprefix('rung:')}" if i else "oracle belief"
                           for i, p in enumerate(rungs["policy"])], rotation=30, ha="right")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("share repaired in full")
        ax.set_title(f"{suite}\nn = {n_range(rows['n'])} episodes per bar or line")
        ax.grid(axis="y", alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="outside right upper", frameon=False, fontsize="small")
    fig.suptitle("Repair ladder: each rung knows one more piece of the answer")
    return fig
