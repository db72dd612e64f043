"""Bootstrap CIs, paired comparisons and summary tables on synthetic frames with known answers."""

import math
import random

import numpy as np
import pandas as pd
import pytest

from srelib.analysis import stats


def test_bootstrap_ci_covers_a_known_mean_about_95_percent_of_the_time():
    true_mean, trials, covered = 0.4, 300, 0
    rng = np.random.default_rng(123)
    for trial in range(trials):
        sample = rng.normal(true_mean, 0.2, size=40)
        _, low, high = stats.bootstrap_ci(sample, n_resamples=1000, seed=trial)
        covered += low <= true_mean <= high
    assert 0.90 <= covered / trials <= 0.985


def test_bootstrap_ci_exact_on_two_points_and_degenerate_cases():
    assert stats.bootstrap_ci([0.0, 1.0], n_resamples=20000) == (0.5, 0.0, 1.0)
    assert stats.bootstrap_ci([0.3] * 7) == (0.3, 0.3, 0.3)
    assert stats.bootstrap_ci([0.8, float("nan")]) == (0.8, 0.8, 0.8)
    assert all(math.isnan(x) for x in stats.bootstrap_ci([]))


def test_bootstrap_ci_is_seeded_and_narrows_with_more_data():
    rng = random.Random(5)
    small = [rng.random() for _ in range(10)]
    large = [rng.random() for _ in range(1000)]
    assert stats.bootstrap_ci(small, seed=3) == stats.bootstrap_ci(small, seed=3)
    _, lo_s, hi_s = stats.bootstrap_ci(small)
    _, lo_l, hi_l = stats.bootstrap_ci(large)
    assert hi_l - lo_l < (hi_s - lo_s) / 3


@pytest.mark.parametrize("kwargs", [{"confidence": 1.0}, {"confidence": 0}, {"n_resamples": 0}])
def test_bootstrap_ci_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        stats.bootstrap_ci([1.0, 2.0], **kwargs)


def _frame(shift=0.1, n=30):
    rng = np.random.default_rng(0)
    rows = []
    for task in ("memory_leak", "info_ordering"):
        for seed in range(n):
            base = float(rng.uniform(0.2, 0.6))
            for policy, value in (("weak", base), ("strong", base + shift)):
                rows.append({"policy": policy, "task": task, "pool": "C", "mode": "joint",
                             "seed": seed, "final": value})
    return pd.DataFrame(rows)


def test_summarize_groups_by_policy_and_task_with_ci_around_the_mean():
    frame = _frame()
    table = stats.summarize(frame)
    assert list(table[["policy", "task"]].itertuples(index=False, name=None)) == [
        ("strong", "info_ordering"), ("strong", "memory_leak"),
        ("weak", "info_ordering"), ("weak", "memory_leak")]
    assert (table["n"] == 30).all()
    for row in table.itertuples():
        group = frame[(frame.policy == row.policy) & (frame.task == row.task)]["final"]
        assert row.mean == pytest.approx(group.mean())
        assert row.ci_low < row.mean < row.ci_high


def test_paired_difference_recovers_a_constant_shift_exactly():
    table = stats.paired_difference(_frame(shift=0.1), "strong", "weak")
    assert list(table["task"]) == ["info_ordering", "memory_leak", "all"]
    assert list(table["n_pairs"]) == [30, 30, 60]
    for row in table.itertuples():
        assert row.mean_diff == pytest.approx(0.1)
        assert row.ci_low == pytest.approx(0.1) and row.ci_high == pytest.approx(0.1)


def test_paired_difference_pairs_on_seed_not_on_row_order():
    frame = _frame(shift=0.2).sample(frac=1.0, random_state=1)
    table = stats.paired_difference(frame, "strong", "weak")
    assert table.loc[table.task == "all", "mean_diff"].item() == pytest.approx(0.2)


def test_paired_difference_errors_name_the_policies():
    with pytest.raises(ValueError, match="policies: \\['strong', 'weak'\\]"):
        stats.paired_difference(_frame(), "strong", "nobody")


def test_summary_table_and_markdown():
    table = stats.summary_table(_frame(shift=0.0, n=5))
    assert list(table.columns) == ["strong", "weak"]
    assert list(table.index) == ["info_ordering", "memory_leak", "mean over tasks"]
    cell = table.loc["memory_leak", "weak"]
    mean, low, high = (float(x) for x in cell.replace("[", "").replace("]", "").replace(",", "").split())
    assert low <= mean <= high
    md = stats.to_markdown(table)
    lines = md.splitlines()
    assert len(lines) == 2 + len(table)
    assert lines[0].split("|")[2].strip() == "strong"
    assert set(lines[1]) <= {"|", "-"}
    assert cell in md
