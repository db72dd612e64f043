"""The HTML every pane is made of: the stylesheet, escaping and number formats, tables, error
boxes, code and diffs. Pure functions to HTML strings, with inline CSS only (no script)."""

from __future__ import annotations

from html import escape
from typing import Any, Iterable

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

MAX_HINTS = 12
SEP = " \u00b7 "
MAX_TABLE_ROWS = 200


def style_tag() -> str:
    """The ``<style>`` block every pane's classes rely on."""
    return f"<style>{STYLE}</style>"


def pane(inner: str) -> str:
    """Wrap a fragment in the ``srl`` class the stylesheet is scoped to."""
    return f'<div class="srl">{inner}</div>'


def plain(value: Any) -> str:
    return escape("" if value is None else str(value))


def formatted(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def signed(value: float) -> str:
    """A reward with its sign, green when positive and red when negative."""
    cls = "srl-pos" if value > 0 else "srl-neg" if value < 0 else ""
    return f'<span class="{cls}">{value:+.4f}</span>'



def in_service_order(mapping: dict | None) -> list[tuple]:
    """``mapping``'s items with services in ``SERVICES`` order (others after, as given)."""
    rank = _service_rank()
    return sorted((mapping or {}).items(), key=lambda kv: rank.get(kv[0], len(rank)))


def _service_rank() -> dict[str, int]:
    from srelib.env.actions import SERVICES

    return {s: i for i, s in enumerate(SERVICES)}


def services_sorted(value: Any) -> Any:
    """A list of service names, or a dict keyed by them, in SERVICES order; else ``value``."""
    rank = _service_rank()
    if isinstance(value, dict) and value and all(k in rank for k in value):
        return dict(in_service_order(value))
    if isinstance(value, list) and all(isinstance(v, str) and v in rank for v in value):
        return sorted(value, key=rank.__getitem__)
    return value


def error_box(message: Any, hints: Iterable[str] | None = None) -> str:
    """An invalid action or a parse failure, said plainly, with some valid actions."""
    hint = ""
    hints = list(hints or [])
    if hints:
        more = f" \u2026 and {len(hints) - MAX_HINTS} more" if len(hints) > MAX_HINTS else ""
        hint = (f'<div class="srl-meta">valid actions: <span class="srl-mono">'
                f'{plain(", ".join(map(str, hints[:MAX_HINTS])))}</span>{more}</div>')
    return f'<div class="srl-error"><b>Error:</b> {plain(message)}{hint}</div>'


def records_table(records: list, columns: Iterable[str] | None = None,
                  cell_class: dict[str, str] | None = None) -> str:
    """A list of dicts as a table; columns in first-seen order unless given."""
    rows = [r for r in records if isinstance(r, dict)]
    if not rows:
        return '<div class="srl-meta">(none)</div>' if not records else f"<pre>{plain(records)}</pre>"
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
                cls = f"srl-sev-{plain(value)}"
            attr = f' class="{cls}"' if cls else ""
            cells.append(f"<td{attr}>{plain(formatted(value))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    more = (f'<div class="srl-meta">\u2026 {len(rows) - MAX_TABLE_ROWS} more rows</div>'
            if len(rows) > MAX_TABLE_ROWS else "")
    head = "".join(f"<th>{plain(c)}</th>" for c in columns)
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def kv_table(mapping: dict) -> str:
    """A dict as a two-column table."""
    rows = "".join(f"<tr><td>{plain(k)}</td><td>{plain(formatted(v))}</td></tr>"
                   for k, v in mapping.items())
    return f'<table class="srl-kv">{rows}</table>'


def code_block(content: str, first_line: int = 1) -> str:
    """File contents with line numbers."""
    lines = content.split("\n")
    if len(lines) > 1 and lines[-1] == "":  # the file's final newline ends the last line
        lines.pop()
    rows = "".join(f'<tr><td class="srl-ln">{n}</td><td>{escape(line)}</td></tr>'
                   for n, line in enumerate(lines, first_line))
    return f'<div class="srl-scroll"><table class="srl-code srl-mono">{rows}</table></div>'


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
