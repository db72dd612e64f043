"""Plots of what episodes did: whether the patch resolved the issue, localisation against score,
steps per phase, and unparsable replies."""

from __future__ import annotations

from typing import Sequence

from srelib.extras import require
from srelib.plots.axes import (bars_with_ci, figure, figure_width, levels, sample_note, short_task,
                               task_axis, value_label)
from srelib.plots.style import RESOLVED, policy_colours


def resolved_rates(frame, *, policies: Sequence[str] | None = None):
    """Per policy, the share of episodes whose patch resolved full, partial or no (SWE-bench's
    meaning: every FAIL_TO_PASS and PASS_TO_PASS test passes, some do, none of the failing
    ones do) and of phase-2 episodes that proposed no patch, as stacked horizontal bars.

    Args:
        frame: A results frame (:func:`srelib.load_run`).
        policies: The policies to draw, in this order (None: those the frame holds, as they come).

    Returns:
        The matplotlib Figure.
    """
    require("numpy", "srelib.plots.outcomes")
    import numpy as np

    from srelib.analysis.behaviour import resolved_rates as rates_of

    policies = levels(frame, "policy", policies)
    phase2 = frame[frame["mode"] != "p1_only"]
    rates = rates_of(frame).reindex(policies, fill_value=0.0)
    fig, ax = figure(width=8.0, height=1.2 + 0.45 * len(policies))
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
    ax.set_title(f"Did the patch resolve the issue?\n{sample_note(phase2, policies)}")
    ax.legend(title="resolved", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def localisation_vs_score(frame, value: str = "final", *,
                          policies: Sequence[str] | None = None, jitter_seed: int = 0):
    """Localisation against ``value``, one point per episode and one colour per policy.

    Two panels: phase-1 localisation (``1 / culprit_rank``) and phase-2 localisation (the share
    of bad commit diffed, bad file read, bad file edited, bad function edited), from
    :func:`srelib.results.localisation.localisation_scores`; points are jittered a little so equal
    episodes stay visible. Two agents that both fail to repair part here when one found the
    bad code and the other never opened it.

    Args:
        frame: A results frame (:func:`srelib.load_run`).
        value: The column on the y axis.
        policies: The policies to draw, in this order (None: those the frame holds, as they come).
        jitter_seed: The seed of the points' jitter.

    Returns:
        The matplotlib Figure.
    """
    require("numpy", "srelib.plots.outcomes")
    import numpy as np

    from srelib.results.localisation import localisation_scores

    policies = levels(frame, "policy", policies)
    colours = policy_colours(policies)
    scores = localisation_scores(frame)
    rng = np.random.default_rng(jitter_seed)
    fig, axes = figure(width=11.0, height=4.6, ncols=2)
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
        ax.set_ylabel(value_label(value))
        ax.grid(alpha=0.3)
    axes[0].set_title("Phase 1: how soon the culprit was checked")
    axes[1].set_title("Phase 2: how close the agent came to the bad code")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, title="policy (episodes)", loc="outside right upper",
               frameon=False)
    fig.suptitle(f"Localisation against {value_label(value)}, one point per episode\n"
                 f"{sample_note(frame, policies)}")
    return fig


def steps_per_phase(frame, *, policies: Sequence[str] | None = None,
                    tasks: Sequence[str] | None = None):
    """Mean steps per episode, phase 1 (solid) stacked under phase 2 (hatched), per task and policy.

    Args:
        frame: A results frame (:func:`srelib.load_run`).
        policies: The policies to draw, in this order (None: those the frame holds, as they come).
        tasks: The tasks to draw, in this order (None: those the frame holds, in TASKS order).

    Returns:
        The matplotlib Figure.
    """
    require("matplotlib", "srelib.plots.outcomes")
    from matplotlib.patches import Patch

    policies, tasks = levels(frame, "policy", policies), levels(frame, "task", tasks)
    colours = policy_colours(policies)
    fig, ax = figure(width=figure_width(len(tasks), len(policies)), height=4.8)
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
    ax.set_xticks(range(len(tasks)), [short_task(t) for t in tasks], rotation=30, ha="right")
    ax.set_xlabel(task_axis(tasks))
    ax.set_ylabel("mean steps per episode")
    ax.set_title(f"Steps per phase\n{sample_note(frame, policies, tasks)}")
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

    Args:
        frame: A results frame (:func:`srelib.load_run`).
        policies: The policies to draw, in this order (None: those the frame holds, as they come).
        seed: The bootstrap's seed.

    Returns:
        The matplotlib Figure.
    """
    require("numpy", "srelib.plots.outcomes")
    import numpy as np

    from srelib.analysis.stats import bootstrap_ci

    policies = levels(frame, "policy", policies)
    colours = policy_colours(policies)
    fig, ax = figure(width=max(5.0, 0.9 * len(policies) + 2), height=3.8)
    for p, policy in enumerate(policies):
        rows = frame[frame["policy"] == policy]
        steps = (rows["p1_steps"] + rows["p2_steps"]).clip(lower=1)
        mean, low, high = bootstrap_ci(rows["parse_failures"] / steps, seed=seed)
        bars_with_ci(ax, np.array([p]), [mean], [low], [high], 0.7, colours[policy], None)
    ax.set_xticks(range(len(policies)), policies, rotation=20, ha="right")
    ax.set_xlabel("policy")
    ax.set_ylabel("parse failures per step")
    ax.set_title(f"Unparsable replies (95% CI)\n{sample_note(frame, policies)}")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    return fig


def has_parse_failures(frame) -> bool:
    """Whether any episode of ``frame`` had an unparsable reply (scripted policies never do).

    Args:
        frame: A results frame (:func:`srelib.load_run`).

    Returns:
        True when some episode counts a parse failure.
    """
    return bool(frame["parse_failures"].fillna(0).sum() > 0)
