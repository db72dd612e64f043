"""Ablations: conditions that can differ do differ, comparisons pair on the same incidents."""

import functools

import pytest

import srelib
from srelib.analysis.ablations import (Condition, ablate, compare, credit_experiment, heldout_experiment,
                              oracle_phase1_experiment, stopping_experiment)
from srelib.policies import CompositePolicy, NullPhase1Policy, ReferencePolicy, RevertPhase2Policy
from srelib.policies.scripted.stopping import ThresholdStopPhase1Policy, _stop_then
from srelib.analysis.stats import bootstrap_mean_difference


def test_stopping_conditions_differ_in_when_they_stop_and_in_score():
    result = stopping_experiment(seeds=8, tuned=False)  # 4 seeds no longer separate them (issue 28)
    steps = result.summary.set_index("condition")["p1_steps"]
    assert steps["stop@0.5"] < steps["stop@0.7"] < steps["stop@0.9"]
    lengths = result.frame.groupby("policy")["p1_steps"].apply(tuple)
    assert len(set(lengths)) == 3, "the three thresholds stop at the same steps"
    assert result.differences["excludes_0"].any(), result.differences
    assert result.differences["paired"].all()


def test_a_tuned_threshold_comes_from_seeds_apart_from_the_evaluation():
    result = stopping_experiment(seeds=2, tasks=["memory_leak", "aliased_fault"],
                                 thresholds=(0.5,), tuning_seeds=range(1000, 1003))
    assert set(result.frame["policy"]) == {"stop@0.5", "stop@tuned"}
    assert set(result.frame["seed"]) == {0, 1}


def test_threshold_policy_rejects_thresholds_outside_zero_one():
    with pytest.raises(ValueError, match="thresholds must lie in"):
        ThresholdStopPhase1Policy(1.5)
    per_task = ThresholdStopPhase1Policy({"memory_leak": 0.4}, default=0.8)
    assert per_task.threshold_for("memory_leak") == 0.4
    assert per_task.threshold_for("aliased_fault") == 0.8


def test_credit_oracle_and_heldout_experiments_measure_what_they_claim():
    credit = credit_experiment(seeds=3, tasks=["memory_leak", "cascading_failure"])
    on = credit.frame[credit.frame.policy == "r_cross on"]
    off = credit.frame[credit.frame.policy == "r_cross off"]
    assert (on["outcome"].to_numpy() >= off["outcome"].to_numpy() - 1e-12).all()
    assert on["r_cross"].notna().all()

    oracle = oracle_phase1_experiment(seeds=4)
    by = oracle.summary.set_index("condition")
    assert by.loc["oracle_p1", "p1_steps"] == 2  # the oracle views the culprit's deploys, then hands over
    parts = oracle.frame.groupby("policy")[["diagnosis", "mitigation"]].mean()
    assert parts.loc["oracle_p1", "diagnosis"] > parts.loc["heuristic_p1", "diagnosis"]
    assert parts.loc["oracle_p1", "mitigation"] < parts.loc["heuristic_p1", "mitigation"]
    gap = oracle.differences.iloc[0]  # the heuristic's mitigation and the oracle's diagnosis
    assert gap["paired"] and gap["n"] == len(oracle.frame) // 2  # roughly even out (issue 28)
    assert gap["ci_low"] <= gap["mean_diff"] <= gap["ci_high"]

    heldout = heldout_experiment(seeds=2)
    row = heldout.differences.iloc[0]
    assert not row["paired"]  # train and held-out tasks share no incident
    tasks = heldout.frame.groupby("policy")["task"].apply(set)
    assert not tasks["train (C)"] & tasks["held-out (D)"]


def test_ablate_pairs_on_task_and_seed_and_resumes_from_its_directory(tmp_path):
    conditions = {"null": functools.partial(CompositePolicy, NullPhase1Policy(), RevertPhase2Policy()),
                  "reference": Condition(ReferencePolicy)}
    first = ablate(conditions, tasks=["memory_leak"], seeds=3, out=tmp_path)
    row = first.differences.iloc[0]
    assert row["paired"] and row["n"] == 3 and row["mean_diff"] > 0.5 and row["excludes_0"]
    assert len(first.episodes) == 6 and all(e.steps for e in first.episodes)
    again = ablate(conditions, tasks=["memory_leak"], seeds=3, out=tmp_path)
    assert again.frame.drop(columns="wall_s").equals(first.frame.drop(columns="wall_s"))


def test_ablate_names_bad_input():
    with pytest.raises(ValueError, match="conditions is empty"):
        ablate({})
    with pytest.raises(ValueError, match="baseline 'x' is not a condition"):
        ablate({"a": ReferencePolicy}, baseline="x", tasks=["memory_leak"], seeds=1)
    with pytest.raises(ValueError, match="unknown outcome column"):
        ablate({"a": Condition(ReferencePolicy, outcome="nope")}, tasks=["memory_leak"], seeds=1)


def test_unpaired_difference_matches_a_hand_computed_mean():
    diff, low, high = bootstrap_mean_difference([1.0, 1.0, 0.0], [0.0, 0.0])
    assert diff == pytest.approx(2 / 3)
    assert low <= diff <= high
