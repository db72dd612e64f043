"""Shared helpers for the benchmark scripts: timing, result rows, tables, the seed's policies.

Every script reports a list of :class:`Row` (one measured number, its unit, the target it is
held to and whether it met it) and prints them as a markdown table, plus JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import os
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests"))  # the seed loader the tests use
from helpers import SEED_POLICIES, load_seed_policies  # noqa: E402,F401 - re-exported


@dataclass
class Row:
    """One measured number. ``met`` is None when the row is informational (no target)."""

    bench: str
    metric: str
    value: float | str
    unit: str = ""
    target: str = ""
    met: bool | None = None
    note: str = ""


def median(values) -> float:
    values = list(values)
    if not values:
        raise ValueError("median of no values")
    return statistics.median(values)


def rss_mb() -> float:
    """The current resident set size of this process, in MiB (Linux /proc, else peak RSS)."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (2**20 if sys.platform == "darwin" else 2**10)


def profile_text(call, top: int) -> str:
    """cProfile one ``call()``; its ``top`` functions by own time, with % of the total."""
    profiler = cProfile.Profile()
    profiler.runcall(call)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    total = stats.total_tt
    out.write(f"total {total:.3f}s; own time and cumulative time as % of the total\n")
    entries = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    for (filename, line, func), (_, calls, tottime, cumtime, _) in entries:
        where = f"{Path(filename).name}:{line}({func})" if line else func
        out.write(f"{100 * tottime / total:6.1f}% own {100 * cumtime / total:6.1f}% cum "
                  f"{calls:>8} calls  {where}\n")
    return out.getvalue()


def format_table(rows: list[Row]) -> str:
    """Rows as a markdown table (value, target and a check mark per row)."""
    lines = ["| bench | metric | value | target | met |", "|---|---|---|---|---|"]
    for row in rows:
        value = f"{row.value:,.4g}" if isinstance(row.value, float) else str(row.value)
        met = {True: "yes", False: "**no**", None: ""}[row.met]
        note = f" ({row.note})" if row.note else ""
        lines.append(f"| {row.bench} | {row.metric}{note} | {value} {row.unit} "
                     f"| {row.target} | {met} |")
    return "\n".join(lines)


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    return parser


def report(rows: list[Row], json_path: str | None = None) -> None:
    """Print the rows as a markdown table; write them as JSON too when asked."""
    print(format_table(rows))
    if json_path:
        Path(json_path).write_text(json.dumps([asdict(r) for r in rows], indent=2))
