"""What the frame plots share: a Figure without pyplot, its width, bars with CIs, the levels of a
column to draw, and the titles' and axes' wording (sample sizes, pools, held-out tasks)."""

from __future__ import annotations

from typing import Sequence

from srelib.extras import require
from srelib.plots.style import HELD_OUT_NOTE


def figure(width: float, height: float, ncols: int = 1):
    """A constrained-layout Figure (no pyplot) and its ``ncols`` axes."""
    require("matplotlib", "srelib.plots.axes")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=True)
    return fig, axes


def figure_width(groups: int, per_group: int) -> float:
    """A figure width in inches that keeps bars readable without growing past a screen."""
    return min(16.0, max(6.0, 0.5 * groups * max(1, per_group) ** 0.5 + 3.5))


def bars_with_ci(ax, xs, means, lows, highs, width, color, label):
    """Bars at ``xs`` with error bars from ``lows`` to ``highs`` (NaN drawn as 0)."""
    require("numpy", "srelib.plots.axes")
    import numpy as np

    means, lows, highs = (np.asarray(a, dtype=float) for a in (means, lows, highs))
    err = np.vstack([np.clip(means - lows, 0, None), np.clip(highs - means, 0, None)])
    ax.bar(xs, np.nan_to_num(means), width * 0.92, color=color, label=label,
           yerr=np.nan_to_num(err), capsize=3, error_kw={"elinewidth": 1, "ecolor": "black"})


def levels(frame, column, chosen):
    """The values of ``column`` to draw: ``chosen`` (each must be present) or all present,
    tasks in TASKS order."""
    present = list(dict.fromkeys(frame[column].dropna()))
    if column == "task":
        from srelib.env.simulation.scenarios import TASKS

        order = {t: i for i, t in enumerate(TASKS)}
        present.sort(key=lambda t: order.get(t, len(order)))
    if chosen is None:
        return present
    missing = [c for c in chosen if c not in present]
    if missing:
        raise ValueError(f"{column} values {missing} are not in the frame; present: {present}")
    return list(chosen)


def values_of(frame, value, *, policy, task):
    """``value`` of one policy on one task, NaNs dropped, as floats."""
    sel = frame[(frame["policy"] == policy) & (frame["task"] == task)][value]
    return sel.dropna().to_numpy(dtype=float)


def sample_note(frame, policies: Sequence[str], tasks: Sequence[str] | None = None) -> str:
    """``n = 4 episodes per policy and task · pool C`` for a title."""
    rows = frame[frame["policy"].isin(policies)]
    if tasks is not None:
        rows = rows[rows["task"].isin(tasks)]
    counts = rows.groupby(["policy", "task"] if tasks is not None else ["policy"]).size()
    unit = "per policy and task" if tasks is not None else "per policy"
    pools = sorted(str(p) for p in rows["pool"].dropna().unique())
    where = f"pool{'s' if len(pools) > 1 else ''} {', '.join(pools)}" if pools else "no pool"
    return f"n = {n_range(counts)} episodes {unit} \u00b7 {where}"


def n_range(counts) -> str:
    """``4`` or ``3\u20135``: the range of ``counts``."""
    low, high = (int(counts.min()), int(counts.max())) if len(counts) else (0, 0)
    return f"{low}" if low == high else f"{low}\u2013{high}"


def task_axis(tasks: Sequence[str]) -> str:
    """The task axis label, explaining the held-out prefix when a held-out task is shown."""
    return f"task ({HELD_OUT_NOTE})" if has_held_out(tasks) else "task"


def has_held_out(tasks: Sequence[str]) -> bool:
    """Whether a held-out task is among ``tasks``."""
    return any(str(t).startswith("heldout_") for t in tasks)


def short_task(task: str) -> str:
    """A task's name on an axis (``h/`` for held out)."""
    return task.replace("heldout_", "h/").replace("_", " ")


def value_label(value: str) -> str:
    """A column's name on an axis."""
    return {"final": "final score", "r_cross": "r_cross"}.get(value, value.replace("_", " "))
