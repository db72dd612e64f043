"""The action-result pane: an ``action_result`` dict as tables, coloured logs, sparklines, code
and diffs. Renderers dispatch on the keys a result carries, so a result shape they do not know
still shows up, as a plain table, rather than disappearing."""

from __future__ import annotations

import json
from html import escape
from typing import Any, Iterable

from srelib.widgets.markup import (MAX_TABLE_ROWS, SEP, code_block, diff_block, error_box,
                                   formatted, kv_table, plain, records_table, services_sorted)

#: Units of the metrics ``check_metrics`` returns (scenarios.METRIC_NAMES, plus replicas).
METRIC_UNITS = {"cpu": "%", "memory": "%", "error_rate": "%", "latency_p50": "ms",
                "latency_p95": "ms", "latency_p99": "ms", "rps": "req/s", "replicas": "pods"}


def result_once(obs: dict, skip: Iterable[str] = ()) -> str:
    """The observation's action result, less what its action message already says."""
    result, message = obs.get("action_result"), obs.get("action_message")
    if isinstance(result, dict) and message:
        skip = (*skip, *(k for k, v in result.items() if v == message))
    return action_result(result, skip=skip)


def action_result(result: Any, skip: Iterable[str] = ()) -> str:
    """An ``action_result`` dict as tables, coloured logs, sparklines, code and diffs.

    Keys in ``skip`` are left out (a pane that shows them already, e.g. the handed-over belief).
    """
    if not isinstance(result, dict):
        return "" if result is None else f"<pre>{plain(result)}</pre>"
    if "error" in result:
        return error_box(result["error"], result.get("valid_actions_hint"))
    sections, meta = [], []
    for key, value in result.items():
        if key in skip:
            continue
        renderer = _SECTIONS.get(key)
        if renderer is not None and value is not None:
            sections.append(renderer(value, result))
        elif key in _CONSUMED:
            continue
        elif value is None or isinstance(value, (str, int, float, bool)) or \
                (isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value)):
            meta.append(f"{plain(key)}: <b>{plain(formatted(value))}</b>")
        else:
            sections.append(f"<div><b>{plain(key)}</b></div><pre>"
                            f"{plain(json.dumps(value, indent=1, sort_keys=True, default=str))}</pre>")
    head = f'<div class="srl-meta">{SEP.join(meta)}</div>' if meta else ""
    return head + "".join(sections)


def _alerts(alerts: list, _result: dict) -> str:
    preferred = ["severity", "source_service", "rule_name", "description", "firing_since"]
    present = [c for c in preferred if any(isinstance(a, dict) and c in a for a in alerts)]
    others = [k for a in alerts if isinstance(a, dict) for k in a if k not in preferred]
    columns = present + list(dict.fromkeys(others))
    return f"<h3>Alerts ({len(alerts)})</h3>" + records_table(alerts, columns, {"severity": "sev"})


def log_lines(logs: list) -> str:
    """Log entries, one per line, levels coloured."""
    lines = []
    for entry in logs:
        if not isinstance(entry, dict):
            lines.append(plain(entry))
            continue
        level = str(entry.get("level", "")).upper()
        trace = f' <span class="srl-lv-DEBUG">{plain(entry["trace_id"])}</span>' \
            if entry.get("trace_id") else ""
        lines.append(f'<span class="srl-lv-DEBUG">{plain(entry.get("timestamp"))}</span> '
                     f'<span class="srl-lv-{escape(level)}">{escape(level):<5}</span> '
                     f'{plain(entry.get("service"))}: '
                     f'<span class="srl-lv-{escape(level)}">{plain(entry.get("message"))}</span>'
                     f'{trace}')
    return f'<div class="srl-log srl-scroll">{"<br>".join(lines) or "(no log lines)"}</div>'


def _logs(logs: list, _result: dict) -> str:
    return f"<h3>Logs ({len(logs)})</h3>" + log_lines(logs)


def sparkline(values: list[float], label: str, width: int = 150, height: int = 34,
              unit: str = "") -> str:
    """A small inline-SVG line plot with its label, range and latest value (in ``unit``)."""
    points = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not points:
        return ""
    low, high = min(points), max(points)
    span = (high - low) or 1.0
    step = width / max(1, len(points) - 1)
    coords = " ".join(f"{i * step:.1f},{height - 2 - (v - low) / span * (height - 4):.1f}"
                      for i, v in enumerate(points))
    last_x, last_y = coords.rsplit(" ", 1)[-1].split(",")
    unit = f"\u202f{plain(unit)}" if unit else ""
    return (f'<div class="srl-spark"><div class="srl-meta">{plain(label)}: '
            f'<b>{points[-1]:.4g}{unit}</b> <small>[{low:.4g}\u2013{high:.4g}{unit}]</small></div>'
            f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{plain(label)}">'
            f'<rect width="{width}" height="{height}" fill="#f6f8fa"/>'
            f'<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="{coords}"/>'
            f'<circle cx="{last_x}" cy="{last_y}" r="2.5" fill="#cf222e"/></svg></div>')


def _metrics(metrics: Any, result: dict) -> str:
    series: dict[str, list] = {}
    if isinstance(metrics, list):
        for point in metrics:
            for key, value in (point.items() if isinstance(point, dict) else ()):
                if key not in ("minute", "timestamp", "time"):
                    series.setdefault(key, []).append(value)
        minutes = [p.get("minute") for p in metrics if isinstance(p, dict) and "minute" in p]
        span = f" \u00b7 minutes {minutes[0]}\u2013{minutes[-1]}" if minutes else ""
    elif isinstance(metrics, dict):
        if not all(isinstance(v, list) for v in metrics.values()):
            return "<h3>Metrics</h3>" + kv_table(metrics)
        series, span = dict(metrics), ""
    else:
        return f"<pre>{plain(metrics)}</pre>"
    name = f" of {plain(result['service'])}" if result.get("service") else ""
    plots = "".join(sparkline(values, key, unit=METRIC_UNITS.get(key, ""))
                    for key, values in series.items())
    return f"<h3>Metrics{name}{span}</h3><div>{plots}</div>"


def _deploys(deploys: list, _result: dict) -> str:
    return f"<h3>Deploy history ({len(deploys)}, oldest first)</h3>" + records_table(deploys)


def _dependencies(deps: Any, _result: dict) -> str:
    if not isinstance(deps, dict):
        return f"<pre>{plain(deps)}</pre>"
    return "<h3>Dependencies</h3>" + kv_table({k: services_sorted(v) for k, v in deps.items()})


def _health(check: Any, _result: dict) -> str:
    if not isinstance(check, dict):
        return f"<h3>Health check</h3><pre>{plain(check)}</pre>"
    return "<h3>Health check</h3>" + kv_table({k: services_sorted(v) for k, v in check.items()})


def _entries(entries: list, result: dict) -> str:
    where = plain(result.get("path", "."))
    return f"<h3>Directory {where}</h3>" + records_table(entries)


def _content(content: Any, result: dict) -> str:
    first = result.get("start_line")
    first = first if isinstance(first, int) and not isinstance(first, bool) and first > 0 else 1
    title = f"<h3>{plain(result.get('path', 'file'))}</h3>"
    return title + code_block(str(content), first)


def _hits(hits: list, result: dict) -> str:
    query = f" for {plain(result['query'])}" if result.get("query") else ""
    return f"<h3>Search hits{query} ({len(hits)})</h3>" + records_table(hits)


def _commits(commits: list, _result: dict) -> str:
    return f"<h3>Git log ({len(commits)}, newest first)</h3>" + records_table(commits)


def _diff(diff: Any, _result: dict) -> str:
    return "<h3>Diff</h3>" + diff_block(str(diff))


def _file_tree(tree: list, _result: dict) -> str:
    items = "<br>".join(plain(p) for p in tree[:MAX_TABLE_ROWS])
    return (f"<details><summary>Repository files ({len(tree)})</summary>"
            f'<div class="srl-log">{items}</div></details>')


def _issue(issue: Any, _result: dict) -> str:
    return f"<h3>Issue</h3><pre>{plain(issue)}</pre>"


def _belief(value: Any, _result: dict) -> str:
    return belief(value)


def _message(message: Any, _result: dict) -> str:
    return f'<div class="srl-note">{plain(message)}</div>'


_SECTIONS = {
    "message": _message, "alerts": _alerts, "logs": _logs, "metrics": _metrics,
    "history": _metrics, "deploys": _deploys, "dependencies": _dependencies,
    "health_check": _health, "entries": _entries, "content": _content, "hits": _hits,
    "commits": _commits, "diff": _diff, "issue": _issue, "file_tree": _file_tree,
    "belief": _belief,
}
#: Keys a section renderer already shows (titles, line offsets).
_CONSUMED = {"start_line"}


def belief(value: Any, oracle: bool = False) -> str:
    """The belief handed to phase 2 (the eight BeliefState fields)."""
    if not isinstance(value, dict):
        return ""
    who = " (oracle, pool B)" if oracle else ""
    return f"<h3>Belief handed over{who}</h3>" + kv_table(value)
