"""The plots render a real evaluation, with the axes, labels and artists they promise."""

import pytest
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.patches import Rectangle

from srelib import plots
from srelib.cli import scripted_policy
from srelib.env.grading import WEIGHTS
from srelib.policies import RevertPhase2Policy
from srelib.rollout import ceiling_table, evaluate

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
    assert [t.get_text() for t in ax.get_legend().get_texts()] == sorted(POLICIES)
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
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(labels) == sorted([*WEIGHTS, "mean final"])
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
