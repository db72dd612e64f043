"""The report's summary sections as HTML: provenance, the verification result, the score
plots, the per-task table with CIs and the localisation columns."""

from __future__ import annotations

import base64
import io
from typing import Any, Sequence

from srelib.extras import require
from srelib.results.localisation import LOCALISATION_COLUMNS, localisation_scores
from srelib.results.store import RunManifest
from srelib.widgets.markup import error_box, kv_table, plain, records_table

#: The plots of a report, each drawn by :mod:`srelib.plots` and inlined as a PNG.
PLOTS = (("score_distributions", {}), ("score_distributions", {"kind": "ecdf"}),
         ("component_breakdown", {}), ("resolved_rates", {}), ("localisation_vs_score", {}))
#: Colours a plot's PNG keeps (a palette image: a quarter of the bytes, the same to the eye).
PNG_COLOURS = 96
#: How many of a run's problems the verification section lists.
MAX_PROBLEMS = 50


def provenance(manifest: RunManifest, episodes: int) -> str:
    """What made the run: when, from which source and packages, in which sandbox, its grid."""
    config = manifest.get("config") or {}
    plan = manifest.get("plan") or {}
    git = manifest.get("git") or {}
    facts = {"episodes": episodes, "created": manifest.get("created"),
             "started": ", ".join(manifest.get("started") or []),
             "git commit": (f"{git.get('commit')}{' (dirty)' if git.get('dirty') else ''}"
                            if git else "not a git checkout"),
             "sandbox": f"{manifest.get('isolation')} ({manifest.get('sandbox') or 'strict'})",
             "verdicts hold": manifest.get("verified"),
             "plan digest": plan.get("digest"),
             "fields no replay checks": ", ".join(manifest.get("unverifiable") or [])}
    settings = {k: v for k, v in config.items() if k != "policies"}
    policies = [{"policy": name, "built by": spec}
                for name, spec in (config.get("policies") or {}).items()]
    versions = [{"package": k, "version": v} for k, v in (manifest.get("versions") or {}).items()]
    return (f"<h2>Provenance</h2>{kv_table(facts)}<h3>Configuration</h3>{kv_table(settings)}"
            f"<h3>Policies</h3>{records_table(policies)}"
            f"<h3>Package versions</h3>{records_table(versions)}")


def verification(problems: Sequence[str] | None, episodes: int) -> str:
    """The replay's verdict on the run: every episode re-played through the seeded
    environment and checked against the manifest's planned grid (None: not verified)."""
    if problems is None:
        body = error_box("not verified: made with --no-verify, so nothing below was replayed")
    elif not problems:
        body = (f'<div class="srl-note" id="srl-verified"><b>Verified:</b> all {episodes} '
                "episodes replay to the records and scores stored, and the run holds exactly "
                "the grid its manifest planned.</div>")
    else:
        listed = "".join(f"<li>{plain(p)}</li>" for p in problems[:MAX_PROBLEMS])
        more = (f"<li>\u2026 and {len(problems) - MAX_PROBLEMS} more</li>"
                if len(problems) > MAX_PROBLEMS else "")
        body = (f'<div class="srl-error" id="srl-verified"><b>{len(problems)} problem(s):</b> '
                f"what is stored is not what the environment replays or the manifest planned."
                f"<ul>{listed}{more}</ul></div>")
    return f"<h2>Verification</h2>{body}"


def plots(frame) -> str:
    """The score distributions and outcome plots, as inline PNGs."""
    from srelib import plots as drawn

    image = require("PIL.Image", "the report's plots")
    images = []
    for name, options in PLOTS:
        fig = getattr(drawn, name)(frame, **options)
        drawn_png, small = io.BytesIO(), io.BytesIO()
        fig.savefig(drawn_png, format="png", dpi=80)
        image.open(drawn_png).convert("RGB").quantize(PNG_COLOURS).save(small, "png",
                                                                          optimize=True)
        data = base64.b64encode(small.getvalue()).decode()
        label = name.replace("_", " ") + (f" ({options['kind']})" if options else "")
        images.append(f'<figure><img alt="{plain(label)}" src="data:image/png;base64,{data}">'
                      f"<figcaption>{plain(label)}</figcaption></figure>")
    return f"<h2>Score distributions</h2><div class='srl-plots'>{''.join(images)}</div>"


def task_table(frame) -> str:
    """Mean final score per task and policy with its 95% bootstrap CI."""
    from srelib.analysis.stats import summary_table

    table = summary_table(frame)
    return ("<h2>Per task</h2><div class='srl-meta'>mean final score [95% bootstrap CI]; the "
            "last row averages each policy's task means</div>" + _frame_table(table, "task"))


def localisation_table(frame) -> str:
    """The localisation columns (srelib.results.localisation), mean per policy, with the two
    folded scores the localisation plot draws."""
    present = [c for c in LOCALISATION_COLUMNS if c in frame.columns]
    folded = localisation_scores(frame).add_prefix("localisation_")
    means = frame[["policy", *present]].join(folded).groupby("policy", sort=False).mean(
        numeric_only=True)
    return ("<h2>Localisation</h2><div class='srl-meta'>means per policy over the episodes "
            "where each column applies (see srelib.results.localisation)</div>"
            + _frame_table(means.round(3), "policy"))


def _frame_table(table, index_name: str) -> str:
    """A DataFrame as the widgets' table, its index first; a missing value is an empty cell."""
    rows: list[dict[str, Any]] = [
        {index_name: label, **{k: None if v != v else v for k, v in row.items()}}  # NaN != NaN
        for label, row in zip(table.index, table.to_dict("records"))]
    return records_table(rows, [index_name, *map(str, table.columns)])
