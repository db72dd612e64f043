"""Statistics over evaluation frames: seeded bootstrap CIs, paired comparisons, summary tables.

Every function takes the tidy frame that :func:`srelib.evaluate` or :func:`srelib.load_run`
returns (one row per episode) and gives back a small DataFrame that renders well in a notebook;
:func:`to_markdown` turns any of them into a Markdown table without extra dependencies.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

from srelib.extras import require
from srelib.results.store import KEY_COLUMNS  # paired comparisons match episodes on these (minus policy)


def bootstrap_ci(values: Iterable[float], *, confidence: float = 0.95, n_resamples: int = 2000,
                 seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``values`` with a percentile-bootstrap confidence interval: ``(mean, low, high)``.

    NaN values are dropped. The resampling draws from ``numpy.random.default_rng(seed)``, so the
    same values always give the same interval. No values gives three NaNs; one value (or values
    that are all equal) gives a zero-width interval.
    """
    require("numpy", "srelib.analysis.stats")
    import numpy as np

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    data = np.asarray(list(values), dtype=float)
    data = data[~np.isnan(data)]
    if data.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(data.mean())
    if data.size == 1 or np.all(data == data[0]):
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, data.size, size=(n_resamples, data.size))
    means = data[picks].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return mean, float(low), float(high)


def bootstrap_mean_difference(a: Iterable[float], b: Iterable[float], *,
                              confidence: float = 0.95, n_resamples: int = 2000,
                              seed: int = 0) -> tuple[float, float, float]:
    """``mean(a) - mean(b)`` for two independent samples, with a percentile-bootstrap CI that
    resamples each side on its own: ``(difference, low, high)``. NaN values are dropped."""
    require("numpy", "srelib.analysis.stats")
    import numpy as np

    sides = [np.asarray(list(v), dtype=float) for v in (a, b)]
    sides = [s[~np.isnan(s)] for s in sides]
    if any(s.size == 0 for s in sides):
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = [s[rng.integers(0, s.size, size=(n_resamples, s.size))].mean(axis=1) for s in sides]
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means[0] - means[1], [tail, 1.0 - tail])
    return float(sides[0].mean() - sides[1].mean()), float(low), float(high)


def summarize(frame, value: str = "final", by: Sequence[str] = ("policy", "task"), *,
              confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0):
    """Per group: ``n``, ``mean``, ``ci_low``, ``ci_high``, ``std``, ``min``, ``max`` of ``value``.

    Rows are sorted by the group columns; missing values (components not counted in a mode) are
    left out of each group's statistics.
    """
    require("pandas", "srelib.analysis.stats")
    import pandas as pd

    _require_columns(frame, [value, *by])
    rows = []
    for key, group in frame.groupby(list(by), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        vals = group[value].astype(float).dropna()
        mean, low, high = bootstrap_ci(vals, confidence=confidence, n_resamples=n_resamples,
                                       seed=seed)
        rows.append({**dict(zip(by, key)), "n": int(vals.size), "mean": mean, "ci_low": low,
                     "ci_high": high, "std": float(vals.std(ddof=1)) if vals.size > 1 else 0.0,
                     "min": float(vals.min()) if vals.size else math.nan,
                     "max": float(vals.max()) if vals.size else math.nan})
    return pd.DataFrame(rows, columns=[*by, "n", "mean", "ci_low", "ci_high", "std", "min", "max"])


def paired_difference(frame, policy_a: str, policy_b: str, value: str = "final",
                      by: Sequence[str] = ("task",), *, confidence: float = 0.95,
                      n_resamples: int = 2000, seed: int = 0):
    """Mean of ``value(policy_a) - value(policy_b)`` over episodes both ran, with a bootstrap CI.

    Episodes are paired on task, pool, mode and seed, so each difference compares the two
    policies on the very same incident. One row per ``by`` group plus a final ``"all"`` row.
    Raises ValueError if either policy is missing or they share no episode.
    """
    require("pandas", "srelib.analysis.stats")
    import pandas as pd

    _require_columns(frame, [*KEY_COLUMNS, value])
    names = sorted(frame["policy"].dropna().unique())
    for name in (policy_a, policy_b):
        if name not in names:
            raise ValueError(f"policy {name!r} is not in the frame; policies: {names}")
    match = [k for k in KEY_COLUMNS if k != "policy"]
    side_a = frame[frame["policy"] == policy_a][[*match, value]]
    side_b = frame[frame["policy"] == policy_b][[*match, value]]
    pairs = side_a.merge(side_b, on=match, suffixes=("_a", "_b"))
    pairs = pairs.dropna(subset=[f"{value}_a", f"{value}_b"])
    if pairs.empty:
        raise ValueError(f"{policy_a!r} and {policy_b!r} share no episode to pair on {match}")
    pairs["diff"] = pairs[f"{value}_a"] - pairs[f"{value}_b"]
    groups = [(dict(zip(by, k if isinstance(k, tuple) else (k,))), g)
              for k, g in pairs.groupby(list(by), sort=True, dropna=False)]
    groups.append(({col: "all" for col in by}, pairs))
    rows = []
    for labels, group in groups:
        mean, low, high = bootstrap_ci(group["diff"], confidence=confidence,
                                       n_resamples=n_resamples, seed=seed)
        rows.append({**labels, "n_pairs": len(group), f"mean_{policy_a}": group[f"{value}_a"].mean(),
                     f"mean_{policy_b}": group[f"{value}_b"].mean(), "mean_diff": mean,
                     "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


def summary_table(frame, value: str = "final", *, digits: int = 2, confidence: float = 0.95,
                  seed: int = 0):
    """A task-by-policy table whose cells read ``"0.52 [0.48, 0.56]"`` (mean and CI of ``value``).

    The last row, ``"mean over tasks"``, averages each policy's task means.
    """
    stats = summarize(frame, value, ("policy", "task"), confidence=confidence, seed=seed)
    cells = stats.assign(cell=[format_ci(m, lo, hi, digits) for m, lo, hi in
                               zip(stats["mean"], stats["ci_low"], stats["ci_high"])])
    table = cells.pivot(index="task", columns="policy", values="cell")
    overall = stats.groupby("policy")["mean"].mean()
    table.loc["mean over tasks"] = [f"{overall[p]:.{digits}f}" for p in table.columns]
    table.columns.name = None
    return table.fillna("")


def to_markdown(frame, *, digits: int = 3, index: bool = True) -> str:
    """Render a DataFrame as a GitHub-flavoured Markdown table (floats to ``digits`` places)."""
    headers = ([frame.index.name or ""] if index else []) + [str(c) for c in frame.columns]
    rows = [([label] if index else []) + list(row) for label, row in frame.iterrows()]
    return markdown_table(headers, rows, digits=digits)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence], *, digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table of ``rows`` under ``headers``, without pandas."""
    headers = [str(h) for h in headers]
    body = [[_format(v, digits) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), rule, *(line(r) for r in body)])


def format_ci(mean: float, low: float, high: float, digits: int = 2) -> str:
    """``"0.52 [0.48, 0.56]"``: a mean and its interval as one table cell (empty for NaN)."""
    if mean is None or math.isnan(mean):
        return ""
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _format(value, digits: int) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return "" if value is None else str(value).replace("|", "\\|")


def _require_columns(frame, columns: Iterable[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks columns {missing}; it has {list(frame.columns)}")
