"""The episode panes: the score with the patch's tests, the phase timeline, one trajectory
record, and a whole episode as one self-contained, deterministic HTML page (inline CSS and SVG,
no script)."""

from __future__ import annotations

import json

from srelib.results.store import COMPONENTS, KEY_COLUMNS
from srelib.widgets.markup import diff_block, error_box, kv_table, pane, plain, signed, style_tag
from srelib.widgets.observation_panes import action_label, incident, status_board
from srelib.widgets.result_panes import belief, result_once

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
        rows.append(f"<tr><td>{plain(name)}</td><td>{plain(weights.get(name))}</td>"
                    f"<td>{shown}</td></tr>")
    final = breakdown.get("final")
    final_text = f"{final:.3f}" if isinstance(final, (int, float)) else plain(final)
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
            tests.append(f"<tr><td>{group}</td><td class='srl-mono'>{plain(test_id)}</td>"
                         f"<td>{mark}</td></tr>")
    # fixed layout: long test ids wrap, so the result column stays in a narrow pane
    table = ('<table class="srl-tests"><tr><th class="srl-group">group</th><th>test</th>'
             f'<th class="srl-result">result</th></tr>{"".join(tests)}</table>') if tests else ""
    error = f'<div class="srl-error">{plain(patch["apply_error"])}</div>' \
        if patch.get("apply_error") else ""
    return (f"<h3>Patch: applied {plain(patch.get('patch_applied'))}, resolved "
            f"<b>{plain(patch.get('resolved'))}</b>"
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
                      f'{plain(record.get("step"))}: {plain((record.get("action") or {}).get("action_type"))}'
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


def step_record(record: dict, obs: dict | None = None, board: bool = True) -> str:
    """One trajectory record: action, validity, reward, statuses (unless ``board`` is False:
    a pane shows them already), effect; the result if known."""
    reward = float(record.get("reward") or 0.0)
    parts = [f'<div>step {plain(record.get("step"))} \u00b7 phase {plain(record.get("phase"))} '
             f'\u00b7 minute {plain(record.get("minute"))} \u00b7 reward {signed(reward)}</div>',
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
        parts.append(f'<div class="srl-meta">{plain(obs.get("action_message"))}</div>')
        parts.append(result_once(obs, skip=effect))
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
    return (f"<h3>{plain(meta['policy'])} on {plain(meta['task'])} \u00b7 final score "
            f"{final_text}</h3><div class='srl-meta'>pool {plain(meta['pool'])} \u00b7 mode "
            f"{plain(meta['mode'])} \u00b7 seed {plain(meta['seed'])} \u00b7 "
            f"{len(episode.get('steps') or [])} records \u00b7 {ended} \u00b7 parse failures "
            f"{plain(episode.get('parse_failures', 0))}</div>{error}")


def episode_html(episode: dict, observations: list[dict | None] | None = None,
                 incident_obs: dict | None = None, note: str | None = None) -> str:
    """A whole episode as one self-contained HTML page (inline CSS and SVG, no script).

    ``observations`` (one per record, or None where unknown) add each step's rendered result;
    ``incident_obs`` (the reset observation) adds the incident summary. Output depends only on
    the arguments, so a fixed seed gives byte-identical pages. ``note`` is shown at the top.
    """
    steps = list(episode.get("steps") or [])
    observations = list(observations or [None] * len(steps))
    body = [f'<div class="srl-note">{plain(note)}</div>'] if note else []
    body.append(episode_header(episode))
    if incident_obs is not None:
        body.append(incident(incident_obs))
    body.append(timeline(steps))
    for record, obs in zip(steps, observations):
        title = (f"step {plain(record.get('step'))} \u00b7 "
                 f"{action_label(record.get('action'))} \u00b7 "
                 f"{signed(float(record.get('reward') or 0.0))}")
        body.append(f"<details><summary>{title}</summary>{step_record(record, obs)}</details>")
    body.append(score(episode.get("score")))
    title = plain(f"srelib episode: {episode.get('policy')} on {episode.get('task')} "
                  f"(seed {episode.get('seed')})")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title>{style_tag()}</head><body>"
            f"{pane(''.join(body))}</body></html>\n")
