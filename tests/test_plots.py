"""The plots render a real evaluation, with the axes, labels and artists they promise."""

import pytest
from matplotlib.colors import to_hex
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.patches import Rectangle

from srelib import plots
from srelib.policies.registry import scripted_policy
from srelib.env.grading.score import WEIGHTS
from srelib.policies import RevertPhase2Policy
from srelib.analysis.ceiling import ceiling_table
from srelib.runners.rollout import evaluate

TASKS = ["memory_leak", "cascading_failure", "circuit_breaker_noop"]
POLICIES = ["heuristic-revert", "oracle-random", "random"]


@pytest.fixture(scope="module")
def frame():
    return evaluate({name: scripted_policy(name) for name in POLICIES}, tasks=TASKS,
                    pools=["C"], seeds=4, progress=False)


def _bars(ax):
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def _tick_labels(ax):
    return [t.get_text() for t in ax.get_xticklabels()]


def test_violin_distribution_has_a_point_cloud_per_policy_and_task(frame, tmp_path):
    fig = plots.score_distributions(frame)
    (ax,) = fig.axes
    assert _tick_labels(ax) == ["memory leak", "cascading failure", "circuit breaker noop"]
    assert ax.get_ylabel() == "final score"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [*sorted(POLICIES),
                                                                    "mean \u00b1 95% CI"]
    assert ax.get_title().endswith("n = 4 episodes per policy and task \u00b7 pool C")
    clouds = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(clouds) == len(POLICIES) * len(TASKS)
    assert sum(len(c.get_offsets()) for c in clouds) == len(frame)
    spread = sum(1 for _, g in frame.groupby(["policy", "task"]) if g["final"].nunique() > 1)
    bodies = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bodies) == spread
    fig.savefig(tmp_path / "d.png")
    assert (tmp_path / "d.png").read_bytes()[:4] == b"\x89PNG"


def test_box_and_ecdf_variants(frame):
    box = plots.score_distributions(frame, kind="box").axes[0]
    assert len(box.patches) == len(POLICIES) * len(TASKS)
    ecdf = plots.score_distributions(frame, kind="ecdf")
    visible = [ax for ax in ecdf.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["memory leak", "cascading failure",
                                                  "circuit breaker noop"]
    assert all(len(ax.get_lines()) == len(POLICIES) for ax in visible)
    last_y = visible[0].get_lines()[0].get_ydata()[-1]
    assert last_y == pytest.approx(1.0)
    with pytest.raises(ValueError, match="valid kinds"):
        plots.score_distributions(frame, kind="pie")


def test_component_breakdown_stacks_each_counted_component(frame):
    (ax,) = plots.component_breakdown(frame).axes
    assert len(_bars(ax)) == len(WEIGHTS) * len(POLICIES) * len(TASKS)
    components, policies = [*ax.artists, ax.get_legend()]  # colours, then hatches
    assert sorted(t.get_text() for t in components.get_texts()) == sorted([*WEIGHTS, "mean final"])
    assert [t.get_text() for t in policies.get_texts()] == sorted(POLICIES)  # the hatch legend
    hatches = [h.get_hatch() or "" for h in policies.legend_handles]
    assert len(set(hatches)) == len(POLICIES)
    assert len(ax.get_lines()) == len(POLICIES) * len(TASKS)


def test_steps_and_parse_failure_plots(frame):
    (steps,) = plots.steps_per_phase(frame).axes
    assert len(_bars(steps)) == 2 * len(POLICIES) * len(TASKS)
    assert [t.get_text() for t in steps.get_legend().get_texts()] == [
        *sorted(POLICIES), "phase 1 (solid)", "phase 2 (hatched)"]
    first = frame[(frame.policy == sorted(POLICIES)[0]) & (frame.task == TASKS[0])]
    p1_bar, p2_bar = _bars(steps)[:2]
    assert p1_bar.get_height() == pytest.approx(first["p1_steps"].mean())
    assert p2_bar.get_height() == pytest.approx(first["p2_steps"].mean())
    assert p2_bar.get_y() == pytest.approx(first["p1_steps"].mean())
    (rate,) = plots.parse_failure_rate(frame).axes
    assert len(_bars(rate)) == len(POLICIES)
    assert all(b.get_height() == 0 for b in _bars(rate))  # scripted policies always parse
    assert rate.get_ylabel() == "parse failures per step"


def test_ceiling_gap_plot_from_a_real_ceiling_table():
    table = ceiling_table(RevertPhase2Policy, {"heuristic": scripted_policy("heuristic")},
                          tasks=TASKS[:2], seeds=2)
    left, right = plots.ceiling_gap(table).axes
    assert len(_bars(left)) == 3 * 2 and len(_bars(right)) == 2 * 2
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["oracle - null",
                                                                      "oracle - heuristic"]
    gaps = sorted(round(b.get_height(), 9) for b in _bars(right))
    assert gaps == sorted(round(g, 9) for g in table["gap"].dropna())
    named = plots.ceiling_gap(table, phase2="RevertPhase2Policy").axes[0]
    assert named.get_title().startswith("Repair of RevertPhase2Policy under each handoff")
    blocked = set(table[(table.handoff == "oracle") & (table.repair == 0)]["task"])
    marks = [t for t in named.texts if t.get_text() == "oracle 0 *"]
    assert len(marks) == len(blocked)
    if blocked:  # the reason is on the figure
        assert "a revert deletes a file" in named.figure.get_supxlabel()


def _legend_colours(ax):
    return [to_hex(h.get_facecolor() if hasattr(h, "get_facecolor") else h.get_color())
            for h in ax.get_legend().legend_handles]


def test_every_policy_has_one_distinct_colour_in_every_plot(frame):
    names = ["null", "random", "oracle-random", "heuristic", "revert", "heuristic-revert",
             "reference", "my-llm"]
    colours = plots.policy_colours(names)
    assert len(set(colours.values())) == len(names)
    assert plots.policy_colours(["my-llm", "heuristic"])["heuristic"] == colours["heuristic"]
    (dist,) = plots.score_distributions(frame).axes
    (steps,) = plots.steps_per_phase(frame).axes
    expected = [plots.POLICY_COLOURS[p].lower() for p in sorted(POLICIES)]
    assert _legend_colours(dist)[:3] == expected
    assert _legend_colours(steps)[:3] == expected


def test_distributions_mark_the_mean_and_its_ci(frame):
    (ax,) = plots.score_distributions(frame, kind="box").axes
    means = [line for line in ax.get_lines() if line.get_marker() == "D"]
    assert len(means) == len(POLICIES) * len(TASKS)
    first = frame[(frame.policy == sorted(POLICIES)[0]) & (frame.task == TASKS[0])]["final"]
    assert means[0].get_ydata()[0] == pytest.approx(first.mean())


def test_held_out_prefix_is_explained():
    held_out = evaluate({"heuristic": scripted_policy("heuristic")}, tasks="all", pools=["D"],
                        seeds=1, progress=False)
    (ax,) = plots.score_distributions(held_out).axes
    assert all(t.startswith("h/") for t in _tick_labels(ax))
    assert ax.get_xlabel() == "task (h/ = held-out task, pool D)"
    assert "pool D" in ax.get_title()


def test_resolved_rates_stack_to_one_per_policy(frame):
    (ax,) = plots.resolved_rates(frame).axes
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(plots.RESOLVED)
    widths = {}
    for bar in _bars(ax):
        widths.setdefault(round(bar.get_y() + bar.get_height() / 2), []).append(bar.get_width())
    assert len(widths) == len(POLICIES)
    assert all(sum(w) == pytest.approx(1.0) for w in widths.values())
    oracle = frame[frame.policy == "oracle-random"]["resolved"]
    full = [b for b in _bars(ax) if to_hex(b.get_facecolor()) == plots.RESOLVED["full"].lower()]
    row = sorted(POLICIES).index("oracle-random")
    assert full[row].get_width() == pytest.approx((oracle == "full").mean())


def test_paired_difference_plot_has_a_row_per_task_and_all(frame):
    (ax,) = plots.paired_difference(frame, "heuristic-revert", "random").axes
    assert _tick_labels_y(ax) == ["memory leak", "cascading failure", "circuit breaker noop",
                                  "all tasks"]
    assert "n = 12 pairs" in ax.get_title()
    assert "heuristic-revert \u2212 random" in ax.get_xlabel()


def _tick_labels_y(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


def test_localisation_plot_has_one_point_per_episode_and_a_colour_per_policy(frame):
    fig = plots.localisation_vs_score(frame)
    left, right = fig.axes
    colours = plots.policy_colours(sorted(POLICIES))
    for ax in (left, right):
        clouds = [c for c in ax.collections if isinstance(c, PathCollection)]
        assert [to_hex(c.get_facecolor()[0]) for c in clouds] == \
            [colours[p].lower() for p in sorted(POLICIES)]
        assert ax.get_ylabel() == "final score"
    # every episode has a phase-1 point (it played phase 1); phase 2 has nothing to find on
    # the no-change task, so its episodes are left out there
    assert sum(len(c.get_offsets()) for c in left.collections) == len(frame)
    assert sum(len(c.get_offsets()) for c in right.collections) == \
        (frame["task"] != "circuit_breaker_noop").sum()


def test_repair_ladder_plot_has_a_bar_per_rung_and_a_line_per_policy():
    from srelib.analysis.ceiling import ladder_episodes, summarize_ladder

    table = summarize_ladder(ladder_episodes(["memory_leak", "circuit_breaker_noop"], seeds=1,
                                             real={"revert": RevertPhase2Policy}))
    (ax,) = plots.repair_ladder(table).axes
    assert len(_bars(ax)) == 5 and _tick_labels(ax)[0] == "oracle belief"
    assert [line.get_label() for line in ax.get_lines()
            if not line.get_label().startswith("_")] == ["revert (oracle handoff)"]


def test_every_plot_is_saved_for_people_to_look_at(frame):
    """Writes tests/artifacts/plots/*.png (ignored by git; a looked-at set is committed with
    ``git add -f``) and checks each is a real PNG."""
    from pathlib import Path

    folder = Path(__file__).parent / "artifacts" / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    (folder.parent / ".gitignore").write_text("*\n")
    table = ceiling_table(RevertPhase2Policy, {"heuristic": scripted_policy("heuristic")},
                          tasks=TASKS, seeds=2)
    figures = {"score_distributions": plots.score_distributions(frame),
               "score_ecdf": plots.score_distributions(frame, kind="ecdf"),
               "components": plots.component_breakdown(frame),
               "resolved": plots.resolved_rates(frame),
               "paired_difference": plots.paired_difference(frame, "heuristic-revert", "random"),
               "steps_per_phase": plots.steps_per_phase(frame),
               "ceiling_gap": plots.ceiling_gap(table, phase2="RevertPhase2Policy"),
               "localisation": plots.localisation_vs_score(frame)}
    for name, fig in figures.items():
        fig.savefig(folder / f"{name}.png", dpi=100)
        assert (folder / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
