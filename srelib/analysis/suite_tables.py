"""Tables that describe the generated suite: tasks per family, service and split, rejections,
small samples of it per family and baseline scores per family.

``srelib tasks --suite generated`` prints the counts; notebooks show them as frames.
"""

from __future__ import annotations

import random
from collections import Counter

from srelib.extras import require


def _report(report):
    """``report``, or the generated suite's (cached on disk)."""
    if report is not None:
        return report
    from srelib.env.tasks.taskgen import generated_suite

    return generated_suite()


def generated_counts(report=None) -> dict[str, tuple[list[str], list[list]]]:
    """``{"families", "services", "rejections", "summary"}`` of the generated suite, each as
    ``(headers, rows)`` (no pandas needed).

    ``families`` and ``services`` count admitted tasks per family (service) and split, with a
    total row and column; ``rejections`` counts rejected candidates per reason; ``summary``
    gives tasks, candidates, the admission rate and the generation time (0 when cached), as
    text.
    """
    report = _report(report)
    infos = list(report.tasks.values())
    splits = sorted({i.split for i in infos})

    def counts(by: str) -> tuple[list[str], list[list]]:
        keys = sorted({getattr(i, by) for i in infos})
        cell = Counter((getattr(i, by), i.split) for i in infos)
        rows = [[k, *(cell[k, sp] for sp in splits), sum(cell[k, sp] for sp in splits)]
                for k in keys]
        rows.append(["total", *(sum(r[1 + j] for r in rows) for j in range(len(splits))),
                     len(infos)])
        return [by, *splits, "total"], rows

    rejected = sum(len(ids) for ids in report.rejected.values())
    candidates = len(infos) + rejected
    return {
        "families": counts("family"),
        "services": counts("service"),
        "rejections": (["reason", "candidates"],
                       sorted(([r, len(ids)] for r, ids in report.rejected.items()),
                              key=lambda row: (-row[1], row[0]))),
        "summary": (["", "generated suite"],
                    [["tasks", str(len(infos))], ["candidates", str(candidates)],
                     ["admission rate", f"{len(infos) / candidates:.1%}" if candidates else "-"],
                     ["generation s",
                      f"{report.seconds:.1f}" if report.seconds else "0 (from the cache)"]]),
    }


def generated_tables(report=None) -> dict:
    """:func:`generated_counts` as DataFrames, for notebooks."""
    require("pandas", "srelib.analysis.suite_tables")
    import pandas as pd

    return {key: pd.DataFrame(rows, columns=headers)
            for key, (headers, rows) in generated_counts(report).items()}


def print_generated(report=None) -> None:
    """Print :func:`generated_counts` as markdown, one titled table each (no pandas needed)."""
    from srelib.analysis.stats import markdown_table

    titles = {"summary": "Generated suite", "families": "Tasks per family and split",
              "services": "Tasks per culprit service and split",
              "rejections": "Rejected candidates by reason"}
    tables = generated_counts(report)
    for key, title in titles.items():
        print(f"## {title}\n")
        print(markdown_table(*tables[key]))
        print()


def family_sample(per_family: int | None = 2, seed: int = 0, report=None) -> list[str]:
    """Up to ``per_family`` generated tasks of each (family, split), all of them with None;
    drawn with ``random.Random(seed)`` so a small sample spans services. In suite order."""
    report = _report(report)
    groups: dict[tuple, list[str]] = {}
    for task, info in report.tasks.items():
        groups.setdefault((info.family, info.split), []).append(task)
    rng = random.Random(seed)
    chosen = {t for ids in groups.values()
              for t in (ids if per_family is None or len(ids) <= per_family
                        else rng.sample(ids, per_family))}
    return [t for t in report.tasks if t in chosen]


def with_family(frame, report=None):
    """The frame's episodes on generated tasks (named by their opaque ids, as frames name them,
    or by their names), with the task's ``family`` and ``split`` added."""
    from srelib.env.tasks.ids import id_of_name

    report = _report(report)
    cards = {**report.tasks, **{id_of_name(t): info for t, info in report.tasks.items()}}
    rows = frame[frame["task"].isin(list(cards))]
    return rows.assign(family=rows["task"].map(lambda t: cards[t].family),
                       split=rows["task"].map(lambda t: cards[t].split))


def family_scores(frame, value: str = "final", report=None):
    """Per generated family and split (rows) and policy (columns): ``"mean (p10-p90)"`` of
    ``value`` over the frame's episodes, plus the number of tasks behind each row."""
    require("pandas", "srelib.analysis.suite_tables")
    import pandas as pd

    rows = with_family(frame, report)
    grouped = rows.groupby(["family", "split", "policy"])[value]
    stats = pd.DataFrame({"mean": grouped.mean(), "p10": grouped.quantile(0.1),
                          "p90": grouped.quantile(0.9)})
    cells = stats.apply(lambda r: f"{r['mean']:.2f} ({r['p10']:.2f}-{r['p90']:.2f})", axis=1)
    table = cells.unstack("policy").reindex(columns=list(dict.fromkeys(frame["policy"])))
    table.insert(0, "tasks", rows.groupby(["family", "split"])["task"].nunique())
    table.columns.name = None
    return table.reset_index()
