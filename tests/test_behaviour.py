"""Behaviour metrics against hand-computed values and real episodes."""

import math

import pandas as pd
import pytest

import srelib
from srelib.analysis import behaviour
from srelib.policies import CompositePolicy, HeuristicPhase1Policy, RevertPhase2Policy
from srelib.results import Episode


def test_ece_matches_a_hand_computed_example():
    # bin 1: confidences 0.1, 0.15 (mean 0.125), one right of two -> |0.125 - 0.5| * 2/5 = 0.15
    # bin 9: 0.9, 0.95, 1.0 (mean 0.95), two right of three -> |0.95 - 2/3| * 3/5 = 0.17
    ece = behaviour.expected_calibration_error([0.1, 0.15, 0.9, 0.95, 1.0],
                                               [False, True, True, True, False])
    assert ece == pytest.approx(0.32)
    assert behaviour.expected_calibration_error([0.8] * 5, [True] * 4 + [False]) == pytest.approx(0.0)
    assert math.isnan(behaviour.expected_calibration_error([], []))


def test_kl_is_zero_on_itself_and_positive_between_different_stopping():
    frame = pd.DataFrame({"policy": ["a"] * 4 + ["b"] * 4, "p1_steps": [2, 3, 5, 5, 12, 12, 14, 30]})
    dist = behaviour.stopping_distribution(frame)
    assert dist.sum(axis=1).tolist() == pytest.approx([1.0, 1.0])
    assert dist.loc["a", "4-5"] == 0.5
    kl = behaviour.stopping_kl(frame)
    assert kl.loc["a", "a"] == pytest.approx(0.0) and kl.loc["a", "b"] > 5
    assert behaviour.kl_divergence([0.5, 0.5], [0.25, 0.75]) == pytest.approx(
        0.5 * math.log(2) + 0.5 * math.log(2 / 3))


@pytest.fixture(scope="module")
def episodes(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    policy = lambda: CompositePolicy(HeuristicPhase1Policy(), RevertPhase2Policy())  # noqa: E731
    srelib.evaluate({"heuristic": policy}, tasks="all", pools=["B", "C"], seeds=2, out=out,
                    progress=False)
    return srelib.results.load_episodes(out)


def test_metrics_over_real_episodes(episodes):
    positions = behaviour.first_positions(episodes).set_index(["policy", "action_type"])
    assert positions.loc[("heuristic", "view_alerts"), "median_position"] == 1
    assert 0 < positions.loc[("heuristic", "transition_to_phase2"), "share"] <= 1

    points, ece = behaviour.calibration(episodes)
    joint = [e for e in episodes if e.pool == "C"]
    assert int(ece.loc[0, "n"]) == len(joint)  # pool B's oracle handoff is not the agent's
    assert points["n"].sum() == len(joint) and 0 <= ece.loc[0, "ece"] <= 1

    breadth = behaviour.search_breadth(episodes)
    assert len(breadth) == len(joint) and (breadth["breadth"] >= 0).all()
    assert list(behaviour.breadth_correlation(breadth).columns) == ["policy", "n", "pearson_r"]

    rates = behaviour.resolved_rates(srelib.results.frame_from_episodes(episodes))
    assert list(rates.columns) == list(behaviour.RESOLUTIONS)
    assert rates.sum(axis=1).tolist() == pytest.approx([1.0])
    outcomes = [(e.score.get("patch") or {}).get("resolved") or "no patch" for e in episodes]
    assert rates.loc["heuristic", "no patch"] == pytest.approx(outcomes.count("no patch") / len(outcomes))


def test_harmful_actions_lists_what_the_grader_penalised():
    from srelib.env.grading.score import harmful_actions

    env = srelib.IncidentEnv()
    env.reset(task="memory_leak", pool="A", seed=0)
    env.step({"action_type": "restart_service", "target_service": "cache"})
    env.step({"action_type": "restart_service", "target_service": "cache"})
    episode = Episode(policy="p", task="memory_leak", pool="A", mode="p1_only", seed=0,
                      steps=env.trajectory)
    table = behaviour.harmful_actions([episode])
    assert table.to_dict("records") == [{"policy": "p", "action": "restart_service:cache",
                                         "count": 2, "episodes": 1}]
    assert harmful_actions(srelib.get_scenario("memory_leak"), env.trajectory) == 2


def test_every_metric_has_a_plot(episodes):
    import matplotlib

    matplotlib.use("Agg")
    from srelib.plots import behaviour as plots

    frame = srelib.results.frame_from_episodes(episodes)
    breadth = behaviour.search_breadth(episodes)
    figures = [plots.stopping(behaviour.stopping_distribution(frame), behaviour.stopping_kl(frame)),
               plots.first_positions(behaviour.first_positions(episodes)),
               plots.reliability(*behaviour.calibration(episodes)),
               plots.search_breadth(breadth, behaviour.breadth_correlation(breadth)),
               plots.harmful(behaviour.harmful_actions(episodes))]
    assert all(fig.axes and fig.axes[0].get_title() for fig in figures)
