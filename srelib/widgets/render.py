"""HTML for people: observations, action results, status boards, beliefs, scores and episodes.

Pure functions from the JSON shapes of docs/CONTRACTS.md to HTML strings, with inline CSS and
inline SVG only (no JavaScript, no plotting library). The widgets compose these panes, and
:func:`episode_html` writes a whole episode as one self-contained, deterministic page.
Renderers dispatch on the keys an ``action_result`` carries, so a result shape they do not
know still shows up, as a plain table, rather than disappearing.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Iterable

from srelib.results.store import COMPONENTS, KEY_COLUMNS

STYLE = """
.srl{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px;color:#1f2328;line-height:1.4}
.srl h3{font-size:14px;margin:6px 0 4px}
.srl table{border-collapse:collapse;margin:4px 0}
.srl th,.srl td{border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top}
.srl th{background:#f6f8fa}
.srl pre,.srl code,.srl .srl-mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.srl pre{margin:4px 0;padding:6px;background:#f6f8fa;border-radius:4px;white-space:pre-wrap;word-break:break-word}
.srl-board{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0}
.srl-svc{padding:4px 8px;border-radius:6px;color:#fff;font-weight:600;min-width:84px;text-align:center}
.srl-healthy{background:#1a7f37}.srl-degraded{background:#9a6700}.srl-down{background:#cf222e}
.srl-unknown{background:#6e7781}
.srl-error{border-left:4px solid #cf222e;background:#ffebe9;padding:6px 8px;margin:4px 0}
.srl-note{border-left:4px solid #0969da;background:#ddf4ff;padding:6px 8px;margin:4px 0}
.srl-meta{color:#59636e;margin:2px 0}
.srl-log{white-space:pre-wrap;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.srl-lv-FATAL,.srl-lv-ERROR{color:#cf222e;font-weight:600}.srl-lv-WARN,.srl-lv-WARNING{color:#9a6700}
.srl-lv-INFO{color:#1f2328}.srl-lv-DEBUG{color:#6e7781}
.srl-sev-critical{color:#cf222e;font-weight:600}.srl-sev-warning{color:#9a6700}
.srl-diff-add{background:#dafbe1}.srl-diff-del{background:#ffebe9}.srl-diff-hunk{color:#8250df}
.srl-diff-file{font-weight:700}
.srl-ln{color:#6e7781;text-align:right;user-select:none;border:none;padding-right:8px}
.srl-code td{border:none;padding:0 4px;white-space:pre}
.srl-spark{display:inline-block;margin:2px 10px 2px 0;vertical-align:top}
.srl-kv td:first-child{color:#59636e}
.srl-bar{display:inline-block;height:9px;background:#0969da;vertical-align:middle}
.srl-pos{color:#1a7f37}.srl-neg{color:#cf222e}
.srl details{margin:4px 0;border:1px solid #d0d7de;border-radius:6px;padding:4px 8px}
.srl summary{cursor:pointer}
.srl-scroll{max-height:360px;overflow:auto;border:1px solid #d0d7de;border-radius:4px}
.srl-html,.srl-html>.widget-html-content{min-width:0;max-width:100%}
.srl-html .srl{min-width:0;width:100%}
.srl .srl-tests{table-layout:fixed;width:100%}
.srl-tests td,.srl-tests th{overflow-wrap:anywhere}
.srl-tests .srl-group{width:8.5em}.srl-tests .srl-result{width:3.5em}
"""

#: Status colours as in the CSS, with a symbol so the board does not rely on colour alone.
STATUS_SYMBOL = {"healthy": "\u25cf", "degraded": "\u25b2", "down": "\u2716"}
MAX_HINTS = 12
SEP = " \u00b7 "
MAX_TABLE_ROWS = 200
#: Units of the metrics ``check_metrics`` returns (scenarios.METRIC_NAMES, plus replicas).
METRIC_UNITS = {"cpu": "%", "memory": "%", "error_rate": "%", "latency_p50": "ms",
                "latency_p95": "ms", "latency_p99": "ms", "rps": "req/s", "replicas": "pods"}


def style_tag() -> str:
    """The ``<style>`` block every pane's classes rely on."""
    return f"<style>{STYLE}</style>"


def pane(inner: str) -> str:
    """Wrap a fragment in the ``srl`` class the stylesheet is scoped to."""
    return f'<div class="srl">{inner}</div>'


def _text(value: Any) -> str:
    return escape("" if value is None else str(value))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def signed(value: float) -> str:
    """A reward with its sign, green when positive and red when negative."""
    cls = "srl-pos" if value > 0 else "srl-neg" if value < 0 else ""
    return f'<span class="{cls}">{value:+.4f}</span>'


# ---------------------------------------------------------------- observation-level panes

def in_service_order(mapping: dict | None) -> list[tuple]:
    """``mapping``'s items with services in ``SERVICES`` order (others after, as given)."""
    rank = _service_rank()
    return sorted((mapping or {}).items(), key=lambda kv: rank.get(kv[0], len(rank)))


def _service_rank() -> dict[str, int]:
    from srelib.env.actions import SERVICES

    return {s: i for i, s in enumerate(SERVICES)}


def _services_sorted(value: Any) -> Any:
    """A list of service names, or a dict keyed by them, in SERVICES order; else ``value``."""
    rank = _service_rank()
    if isinstance(value, dict) and value and all(k in rank for k in value):
        return dict(in_service_order(value))
    if isinstance(value, list) and all(isinstance(v, str) and v in rank for v in value):
        return sorted(value, key=rank.__getitem__)
    return value


def counter(steps_taken: Any, max_steps: Any, phase: Any, done: bool = False) -> str:
    """``step 3/40 · phase 1`` (and ``done``): how the stepper and the viewer number steps."""
    ended = f"{SEP}done" if done else ""
    return f"<b>step {_text(steps_taken)}/{_text(max_steps)}</b>{SEP}phase {_text(phase)}{ended}"


def status_board(statuses: dict[str, str] | None) -> str:
    """The seven services as coloured chips (colour plus symbol plus word), in SERVICES order."""
    chips = []
    for service, status in in_service_order(statuses):
        status = str(status)
        cls = f"srl-{status}" if status in STATUS_SYMBOL else "srl-unknown"
        chips.append(f'<div class="srl-svc {cls}" title="{_text(service)}: {_text(status)}">'
                     f'{STATUS_SYMBOL.get(status, "?")} {_text(service)}<br>'
                     f'<small>{_text(status)}</small></div>')
    return f'<div class="srl-board">{"".join(chips)}</div>'


def incident(obs: dict) -> str:
    """Title, severity, summary, clock and step budget; in phase 2 also the issue text."""
    parts = [f'<h3>{_text(obs.get("severity"))} \u00b7 {_text(obs.get("incident_title"))}</h3>',
             f'<div>{_text(obs.get("incident_summary"))}</div>',
             f'<div class="srl-meta">phase {_text(obs.get("current_phase"))} \u00b7 minute '
             f'{_text(obs.get("time_elapsed_minutes"))} \u00b7 step {_text(obs.get("steps_taken"))}'
             f'/{_text(obs.get("max_steps"))} \u00b7 {_text(obs.get("active_alerts_count"))} '
             f'alerts firing</div>']
    if obs.get("issue"):
        parts.append(f'<details><summary>Issue handed to phase 2</summary>'
                     f'<pre>{_text(obs["issue"])}</pre></details>')
    return "".join(parts)


def rewards(obs: dict) -> str:
    """Step reward, cumulative reward, phase and whether the episode is over."""
    return reward_line(obs.get("current_phase"), obs.get("current_reward"),
                       obs.get("cumulative_reward"), bool(obs.get("done")))


def reward_line(phase: Any, step_reward: Any, cumulative: Any, done: bool) -> str:
    """``phase 1 · step reward +0.1300 · cumulative +0.2600`` (and ``done``)."""
    ended = f"{SEP}<b>done</b>" if done else ""
    return (f'<div>phase <b>{_text(phase)}</b>{SEP}step reward {signed(float(step_reward or 0))}'
            f'{SEP}cumulative {signed(float(cumulative or 0))}{ended}</div>')


def action_label(action: dict | None) -> str:
    """``query_logs \u2192 orders (level=ERROR)`` with long parameter values shortened."""
    if not isinstance(action, dict):
        return f'<span class="srl-mono">{_text(action)}</span>'
    label = _text(action.get("action_type"))
    if action.get("target_service"):
        label += f' \u2192 {_text(action["target_service"])}'
    params = action.get("parameters") or {}
    if isinstance(params, dict) and params:
        shown = []
        for key, value in params.items():
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            if len(text) > 60:
                text = text[:57] + "\u2026"
            shown.append(f"{_text(key)}={_text(text)}")
        label += f' <span class="srl-meta">({", ".join(shown)})</span>'
    return f'<span class="srl-mono"><b>{label}</b></span>'


def last_action(action: dict | None, obs: dict) -> str:
    """The action just taken, its one-line message, and its result rendered for people."""
    head = f"<h3>Last action: {action_label(action)}</h3>" if action else "<h3>Episode start</h3>"
    message = f'<div class="srl-meta">{_text(obs.get("action_message"))}</div>'
    body = _result_once(obs, skip=("belief",))  # the belief pane has the belief
    if isinstance(action, dict) and isinstance(action.get("parameters"), dict):
        diff = action["parameters"].get("diff")
        if isinstance(diff, str) and diff:
            body += "<h3>Proposed patch</h3>" + diff_block(diff)
    return head + message + body


# ---------------------------------------------------------------- action results

def _result_once(obs: dict, skip: Iterable[str] = ()) -> str:
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
        return "" if result is None else f"<pre>{_text(result)}</pre>"
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
            meta.append(f"{_text(key)}: <b>{_text(_fmt(value))}</b>")
        else:
            sections.append(f"<div><b>{_text(key)}</b></div><pre>"
                            f"{_text(json.dumps(value, indent=1, sort_keys=True, default=str))}</pre>")
    head = f'<div class="srl-meta">{SEP.join(meta)}</div>' if meta else ""
    return head + "".join(sections)


def error_box(message: Any, hints: Iterable[str] | None = None) -> str:
    """An invalid action or a parse failure, said plainly, with some valid actions."""
    hint = ""
    hints = list(hints or [])
    if hints:
        more = f" \u2026 and {len(hints) - MAX_HINTS} more" if len(hints) > MAX_HINTS else ""
        hint = (f'<div class="srl-meta">valid actions: <span class="srl-mono">'
                f'{_text(", ".join(map(str, hints[:MAX_HINTS])))}</span>{more}</div>')
    return f'<div class="srl-error"><b>Error:</b> {_text(message)}{hint}</div>'


def records_table(records: list, columns: Iterable[str] | None = None,
                  cell_class: dict[str, str] | None = None) -> str:
    """A list of dicts as a table; columns in first-seen order unless given."""
    rows = [r for r in records if isinstance(r, dict)]
    if not rows:
        return '<div class="srl-meta">(none)</div>' if not records else f"<pre>{_text(records)}</pre>"
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    columns = list(columns)
    cell_class = cell_class or {}
    body = []
    for row in rows[:MAX_TABLE_ROWS]:
        cells = []
        for col in columns:
            value = row.get(col)
            cls = cell_class.get(col, "")
            if cls == "sev":
                cls = f"srl-sev-{_text(value)}"
            attr = f' class="{cls}"' if cls else ""
            cells.append(f"<td{attr}>{_text(_fmt(value))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    more = (f'<div class="srl-meta">\u2026 {len(rows) - MAX_TABLE_ROWS} more rows</div>'
            if len(rows) > MAX_TABLE_ROWS else "")
    head = "".join(f"<th>{_text(c)}</th>" for c in columns)
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def kv_table(mapping: dict) -> str:
    """A dict as a two-column table."""
    rows = "".join(f"<tr><td>{_text(k)}</td><td>{_text(_fmt(v))}</td></tr>"
                   for k, v in mapping.items())
    return f'<table class="srl-kv">{rows}</table>'


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
            lines.append(_text(entry))
            continue
        level = str(entry.get("level", "")).upper()
        trace = f' <span class="srl-lv-DEBUG">{_text(entry["trace_id"])}</span>' \
            if entry.get("trace_id") else ""
        lines.append(f'<span class="srl-lv-DEBUG">{_text(entry.get("timestamp"))}</span> '
                     f'<span class="srl-lv-{escape(level)}">{escape(level):<5}</span> '
                     f'{_text(entry.get("service"))}: '
                     f'<span class="srl-lv-{escape(level)}">{_text(entry.get("message"))}</span>'
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
    unit = f"\u202f{_text(unit)}" if unit else ""
    return (f'<div class="srl-spark"><div class="srl-meta">{_text(label)}: '
            f'<b>{points[-1]:.4g}{unit}</b> <small>[{low:.4g}\u2013{high:.4g}{unit}]</small></div>'
            f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{_text(label)}">'
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
        return f"<pre>{_text(metrics)}</pre>"
    name = f" of {_text(result['service'])}" if result.get("service") else ""
    plots = "".join(sparkline(values, key, unit=METRIC_UNITS.get(key, ""))
                    for key, values in series.items())
    return f"<h3>Metrics{name}{span}</h3><div>{plots}</div>"


def _deploys(deploys: list, _result: dict) -> str:
    return f"<h3>Deploy history ({len(deploys)}, oldest first)</h3>" + records_table(deploys)


def _dependencies(deps: Any, _result: dict) -> str:
    if not isinstance(deps, dict):
        return f"<pre>{_text(deps)}</pre>"
    return "<h3>Dependencies</h3>" + kv_table({k: _services_sorted(v) for k, v in deps.items()})


def _health(check: Any, _result: dict) -> str:
    if not isinstance(check, dict):
        return f"<h3>Health check</h3><pre>{_text(check)}</pre>"
    return "<h3>Health check</h3>" + kv_table({k: _services_sorted(v) for k, v in check.items()})


def _entries(entries: list, result: dict) -> str:
    where = _text(result.get("path", "."))
    return f"<h3>Directory {where}</h3>" + records_table(entries)


def code_block(content: str, first_line: int = 1) -> str:
    """File contents with line numbers."""
    lines = content.split("\n")
    if len(lines) > 1 and lines[-1] == "":  # the file's final newline ends the last line
        lines.pop()
    rows = "".join(f'<tr><td class="srl-ln">{n}</td><td>{escape(line)}</td></tr>'
                   for n, line in enumerate(lines, first_line))
    return f'<div class="srl-scroll"><table class="srl-code srl-mono">{rows}</table></div>'


def _content(content: Any, result: dict) -> str:
    first = result.get("start_line")
    first = first if isinstance(first, int) and not isinstance(first, bool) and first > 0 else 1
    title = f"<h3>{_text(result.get('path', 'file'))}</h3>"
    return title + code_block(str(content), first)


def _hits(hits: list, result: dict) -> str:
    query = f" for {_text(result['query'])}" if result.get("query") else ""
    return f"<h3>Search hits{query} ({len(hits)})</h3>" + records_table(hits)


def _commits(commits: list, _result: dict) -> str:
    return f"<h3>Git log ({len(commits)}, newest first)</h3>" + records_table(commits)


def diff_block(diff: str) -> str:
    """A unified diff with additions, removals, hunk headers and file headers coloured."""
    lines = []
    for line in diff.split("\n"):
        if line.startswith(("diff --git", "+++", "---", "index ")):
            cls = "srl-diff-file"
        elif line.startswith("@@"):
            cls = "srl-diff-hunk"
        elif line.startswith("+"):
            cls = "srl-diff-add"
        elif line.startswith("-"):
            cls = "srl-diff-del"
        else:
            cls = ""
        lines.append(f'<div class="{cls}">{escape(line) or "&nbsp;"}</div>')
    return f'<div class="srl-log srl-mono srl-scroll">{"".join(lines)}</div>'


def _diff(diff: Any, _result: dict) -> str:
    return "<h3>Diff</h3>" + diff_block(str(diff))


def _file_tree(tree: list, _result: dict) -> str:
    items = "<br>".join(_text(p) for p in tree[:MAX_TABLE_ROWS])
    return (f"<details><summary>Repository files ({len(tree)})</summary>"
            f'<div class="srl-log">{items}</div></details>')


def _issue(issue: Any, _result: dict) -> str:
    return f"<h3>Issue</h3><pre>{_text(issue)}</pre>"


def _belief(value: Any, _result: dict) -> str:
    return belief(value)


def _message(message: Any, _result: dict) -> str:
    return f'<div class="srl-note">{_text(message)}</div>'


_SECTIONS = {
    "message": _message, "alerts": _alerts, "logs": _logs, "metrics": _metrics,
    "history": _metrics, "deploys": _deploys, "dependencies": _dependencies,
    "health_check": _health, "entries": _entries, "content": _content, "hits": _hits,
    "commits": _commits, "diff": _diff, "issue": _issue, "file_tree": _file_tree,
    "belief": _belief,
}
#: Keys a section renderer already shows (titles, line offsets).
_CONSUMED = {"start_line"}


# ---------------------------------------------------------------- handoff, score, timeline

def belief(value: Any, oracle: bool = False) -> str:
    """The belief handed to phase 2 (the eight BeliefState fields)."""
    if not isinstance(value, dict):
        return ""
    who = " (oracle, pool B)" if oracle else ""
    return f"<h3>Belief handed over{who}</h3>" + kv_table(value)


def score(breakdown: dict | None) -> str:
    """The final score, each component with its weight and a bar, and the patch's test results."""
    if not isinstance(breakdown, dict):
        return ""
    weights = breakdown.get("weights") or {}
    counted = set(breakdown.get("counted") or ())
    rows = []
    for name in weights or COMPONENTS:
        value = breakdown.get(name)
        if name in counted and isinstance(value, (int, float)):
            bar = f'<span class="srl-bar" style="width:{max(0.0, min(1.0, value)) * 120:.0f}px"></span>'
            shown = f"{value:.3f} {bar}"
        else:
            shown = '<span class="srl-meta">not counted</span>'
        rows.append(f"<tr><td>{_text(name)}</td><td>{_text(weights.get(name))}</td>"
                    f"<td>{shown}</td></tr>")
    final = breakdown.get("final")
    final_text = f"{final:.3f}" if isinstance(final, (int, float)) else _text(final)
    extra = {k: breakdown[k] for k in ("declared_no_change", "harmful_actions", "steps")
             if k in breakdown}
    out = (f"<h3>Score: {final_text}</h3><table><tr><th>component</th><th>weight</th>"
           f"<th>value</th></tr>{''.join(rows)}</table>")
    if extra:
        out += kv_table({k: json.dumps(v, sort_keys=True) if isinstance(v, dict) else v
                         for k, v in extra.items()})
    return out + patch_result(breakdown.get("patch"))


def patch_result(patch: dict | None) -> str:
    """``grade_patch``'s result: applied or not, resolved status, each hidden test pass/fail."""
    if not isinstance(patch, dict):
        return ""
    tests = []
    for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        for test_id, passed in (patch.get(group) or {}).items():
            mark = '<span class="srl-pos">pass</span>' if passed else \
                '<span class="srl-neg">fail</span>'
            tests.append(f"<tr><td>{group}</td><td class='srl-mono'>{_text(test_id)}</td>"
                         f"<td>{mark}</td></tr>")
    # fixed layout: long test ids wrap, so the result column stays in a narrow pane
    table = ('<table class="srl-tests"><tr><th class="srl-group">group</th><th>test</th>'
             f'<th class="srl-result">result</th></tr>{"".join(tests)}</table>') if tests else ""
    error = f'<div class="srl-error">{_text(patch["apply_error"])}</div>' \
        if patch.get("apply_error") else ""
    return (f"<h3>Patch: applied {_text(patch.get('patch_applied'))}, resolved "
            f"<b>{_text(patch.get('resolved'))}</b>"
            f"{' (timed out)' if patch.get('timed_out') else ''}</h3>{error}{table}")


def timeline(steps: list[dict], current: int | None = None, width: int = 640) -> str:
    """An inline-SVG strip: phase bands, one reward bar per step, invalid steps crossed out.

    ``current`` (an index into ``steps``) is outlined, so a replay can show where it is.
    """
    if not steps:
        return ""
    height, mid = 60, 34
    slot = width / len(steps)
    top = max([abs(float(r.get("reward") or 0.0)) for r in steps] + [1e-9])
    shapes = []
    for i, record in enumerate(steps):
        x = i * slot
        phase = record.get("phase")
        band = "#ddf4ff" if phase == 1 else "#fbefff"
        shapes.append(f'<rect x="{x:.1f}" y="0" width="{slot:.1f}" height="{height}" fill="{band}"/>')
        reward = float(record.get("reward") or 0.0)
        bar = abs(reward) / top * 24
        y = mid - bar if reward >= 0 else mid
        colour = "#1a7f37" if reward >= 0 else "#cf222e"
        shapes.append(f'<rect x="{x + slot * 0.2:.1f}" y="{y:.1f}" width="{slot * 0.6:.1f}" '
                      f'height="{max(bar, 0.8):.1f}" fill="{colour}"><title>step '
                      f'{_text(record.get("step"))}: {_text((record.get("action") or {}).get("action_type"))}'
                      f' {reward:+.4f}</title></rect>')
        if not record.get("valid", True):
            cx = x + slot / 2
            shapes.append(f'<text x="{cx:.1f}" y="{height - 3}" font-size="10" text-anchor="middle" '
                          f'fill="#cf222e">\u2716</text>')
        if (record.get("action") or {}).get("action_type") == "transition_to_phase2" or \
                "belief" in (record.get("effect") or {}):
            shapes.append(f'<line x1="{x + slot:.1f}" x2="{x + slot:.1f}" y1="0" y2="{height}" '
                          f'stroke="#8250df" stroke-width="2"/>')
    if current is not None and 0 <= current < len(steps):
        shapes.append(f'<rect x="{current * slot:.1f}" y="0.5" width="{slot:.1f}" '
                      f'height="{height - 1}" fill="none" stroke="#1f2328" stroke-width="1.5"/>')
    shapes.append(f'<line x1="0" x2="{width}" y1="{mid}" y2="{mid}" stroke="#8c959f" '
                  f'stroke-width="0.5"/>')
    legend = ('<div class="srl-meta">blue band: phase 1 \u00b7 purple band: phase 2 \u00b7 '
              'bars: step reward (green +, red \u2212) \u00b7 \u2716 invalid \u00b7 '
              'violet line: handoff</div>')
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="phase timeline">{"".join(shapes)}</svg>{legend}')


# ---------------------------------------------------------------- whole episodes

def step_record(record: dict, obs: dict | None = None, board: bool = True) -> str:
    """One trajectory record: action, validity, reward, statuses (unless ``board`` is False:
    a pane shows them already), effect; the result if known."""
    reward = float(record.get("reward") or 0.0)
    parts = [f'<div>step {_text(record.get("step"))} \u00b7 phase {_text(record.get("phase"))} '
             f'\u00b7 minute {_text(record.get("minute"))} \u00b7 reward {signed(reward)}</div>',
             f'<div>{action_label(record.get("action"))}</div>']
    result = (obs or {}).get("action_result")
    explained = isinstance(result, dict) and "error" in result  # the result below says it
    if (not record.get("valid", True) or record.get("error")) and not explained:
        parts.append(error_box(record.get("error") or "invalid action"))
    if board:
        parts.append(status_board(record.get("statuses")))
    effect = record.get("effect") or {}
    if "belief" in effect:
        parts.append(belief(effect["belief"], oracle=bool(effect.get("oracle"))))
    elif effect:
        parts.append(kv_table({k: v for k, v in effect.items() if k != "diff"}))
    if obs is not None:
        parts.append(f'<div class="srl-meta">{_text(obs.get("action_message"))}</div>')
        parts.append(_result_once(obs, skip=effect))
    action = record.get("action") or {}
    diff = (action.get("parameters") or {}).get("diff") if isinstance(action, dict) else None
    if isinstance(diff, str) and diff:
        parts.append("<h3>Proposed patch</h3>" + diff_block(diff))
    return "".join(parts)


def episode_header(episode: dict) -> str:
    """Who played which incident, and how it ended."""
    final = (episode.get("score") or {}).get("final")
    final_text = f"{final:.3f}" if isinstance(final, (int, float)) else "\u2013"
    ended = "terminated" if episode.get("terminated") else \
        "truncated" if episode.get("truncated") else "unfinished"
    if episode.get("ended_by"):
        ended += f" ({episode['ended_by']})"
    meta = {k: episode.get(k) for k in KEY_COLUMNS}
    error = error_box(f"policy error: {episode['error']}") if episode.get("error") else ""
    return (f"<h3>{_text(meta['policy'])} on {_text(meta['task'])} \u00b7 final score "
            f"{final_text}</h3><div class='srl-meta'>pool {_text(meta['pool'])} \u00b7 mode "
            f"{_text(meta['mode'])} \u00b7 seed {_text(meta['seed'])} \u00b7 "
            f"{len(episode.get('steps') or [])} records \u00b7 {ended} \u00b7 parse failures "
            f"{_text(episode.get('parse_failures', 0))}</div>{error}")


def episode_html(episode: dict, observations: list[dict | None] | None = None,
                 incident_obs: dict | None = None, note: str | None = None) -> str:
    """A whole episode as one self-contained HTML page (inline CSS and SVG, no script).

    ``observations`` (one per record, or None where unknown) add each step's rendered result;
    ``incident_obs`` (the reset observation) adds the incident summary. Output depends only on
    the arguments, so a fixed seed gives byte-identical pages. ``note`` is shown at the top.
    """
    steps = list(episode.get("steps") or [])
    observations = list(observations or [None] * len(steps))
    body = [f'<div class="srl-note">{_text(note)}</div>'] if note else []
    body.append(episode_header(episode))
    if incident_obs is not None:
        body.append(incident(incident_obs))
    body.append(timeline(steps))
    for record, obs in zip(steps, observations):
        title = (f"step {_text(record.get('step'))} \u00b7 "
                 f"{action_label(record.get('action'))} \u00b7 "
                 f"{signed(float(record.get('reward') or 0.0))}")
        body.append(f"<details><summary>{title}</summary>{step_record(record, obs)}</details>")
    body.append(score(episode.get("score")))
    title = _text(f"srelib episode: {episode.get('policy')} on {episode.get('task')} "
                  f"(seed {episode.get('seed')})")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title>{style_tag()}</head><body>"
            f"{pane(''.join(body))}</body></html>\n")
