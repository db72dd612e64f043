"""bench/results.md and the documentation's benchmark table, written from one run of run_all.py.

``results.md`` holds the machine, the date, the commit, each script's exact command, the load
average when it started (a row whose script started with other work on the machine says
"under load") and every row. The table of docs/benchmarks.md, between :data:`START` and
:data:`END`, is the rows that have a target, rewritten from the same run; only a run of every script writes it.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from common import REPO_ROOT, Row, format_table

START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"


@dataclass
class ScriptRun:
    """One benchmark script as run: its command, the load when it started, its rows."""

    script: str
    command: str
    load: float
    seconds: float
    rows: list[Row] = field(default_factory=list)

    def under_load(self) -> bool:
        """More runnable work than cores when it started: others' jobs, not this benchmark."""
        return self.load > (os.cpu_count() or 1)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                          capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip()
    return (done.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


def _labelled(run: ScriptRun) -> list[Row]:
    """The script's rows, each noting "under load" when its script started under load."""
    if not run.under_load():
        return run.rows
    return [Row(**{**r.__dict__, "note": "; ".join(filter(None, [r.note,
                f"under load: load average {run.load:.1f}"]))}) for r in run.rows]


def results_markdown(runs: list[ScriptRun], command: str, profiles: list[str]) -> str:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    loaded = [r.script for r in runs if r.under_load()]
    lines = ["# Benchmark results", "",
             f"Written by `{command}` (`make bench` runs the full set); do not edit by hand.",
             "",
             f"- date: {now}", f"- machine: {machine()}", f"- commit: {_commit()}",
             "- under load: " + (", ".join(loaded) if loaded else
                                 "none (every script started with load average <= cores)"),
             "", "## Commands", "", "| script | command | load average at start | wall |",
             "|---|---|---|---|"]
    lines += [f"| {r.script} | `{r.command}` | {r.load:.1f} | {r.seconds:.0f} s |" for r in runs]
    lines += ["", "## Rows", "", format_table([row for r in runs for row in _labelled(r)])]
    lines += [f"\n{text}" for text in profiles]
    return "\n".join(lines) + "\n"


def targets_table(runs: list[ScriptRun]) -> str:
    """The page's block: every row with a target, and where the rest is."""
    rows = [row for r in runs for row in _labelled(r) if row.target]
    return "\n".join([START, format_table(rows), "",
                      "Every row, each script's command and the machine: [below](#every-row) "
                      "(`bench/results.md`; `make bench` rewrites both).", END])


def write_targets(path: Path, runs: list[ScriptRun]) -> None:
    """Rewrite the block between :data:`START` and :data:`END` of the page at ``path``."""
    text = path.read_text()
    if START not in text or END not in text:
        raise ValueError(f"{path} has no {START} ... {END} block to rewrite")
    head, rest = text.split(START, 1)
    path.write_text(head + targets_table(runs) + rest.split(END, 1)[1])
