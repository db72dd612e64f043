"""The observation panes: the step counter, the status board, the incident, rewards and the
last action with its result."""

from __future__ import annotations

import json
from typing import Any

from srelib.widgets.markup import SEP, diff_block, in_service_order, plain, signed
from srelib.widgets.result_panes import result_once

#: Status colours as in the CSS, with a symbol so the board does not rely on colour alone.
STATUS_SYMBOL = {"healthy": "\u25cf", "degraded": "\u25b2", "down": "\u2716"}


def counter(steps_taken: Any, max_steps: Any, phase: Any, done: bool = False) -> str:
    """``step 3/40 · phase 1`` (and ``done``): how the stepper and the viewer number steps."""
    ended = f"{SEP}done" if done else ""
    return f"<b>step {plain(steps_taken)}/{plain(max_steps)}</b>{SEP}phase {plain(phase)}{ended}"


def status_board(statuses: dict[str, str] | None) -> str:
    """The seven services as coloured chips (colour plus symbol plus word), in SERVICES order."""
    chips = []
    for service, status in in_service_order(statuses):
        status = str(status)
        cls = f"srl-{status}" if status in STATUS_SYMBOL else "srl-unknown"
        chips.append(f'<div class="srl-svc {cls}" title="{plain(service)}: {plain(status)}">'
                     f'{STATUS_SYMBOL.get(status, "?")} {plain(service)}<br>'
                     f'<small>{plain(status)}</small></div>')
    return f'<div class="srl-board">{"".join(chips)}</div>'


def incident(obs: dict) -> str:
    """Title, severity, summary, clock and step budget; in phase 2 also the issue text."""
    parts = [f'<h3>{plain(obs.get("severity"))} \u00b7 {plain(obs.get("incident_title"))}</h3>',
             f'<div>{plain(obs.get("incident_summary"))}</div>',
             f'<div class="srl-meta">phase {plain(obs.get("current_phase"))} \u00b7 minute '
             f'{plain(obs.get("time_elapsed_minutes"))} \u00b7 step {plain(obs.get("steps_taken"))}'
             f'/{plain(obs.get("max_steps"))} \u00b7 {plain(obs.get("active_alerts_count"))} '
             f'alerts firing</div>']
    if obs.get("issue"):
        parts.append(f'<details><summary>Issue handed to phase 2</summary>'
                     f'<pre>{plain(obs["issue"])}</pre></details>')
    return "".join(parts)


def rewards(obs: dict) -> str:
    """Step reward, cumulative reward, phase and whether the episode is over."""
    return reward_line(obs.get("current_phase"), obs.get("current_reward"),
                       obs.get("cumulative_reward"), bool(obs.get("done")))


def reward_line(phase: Any, step_reward: Any, cumulative: Any, done: bool) -> str:
    """``phase 1 · step reward +0.1300 · cumulative +0.2600`` (and ``done``)."""
    ended = f"{SEP}<b>done</b>" if done else ""
    return (f'<div>phase <b>{plain(phase)}</b>{SEP}step reward {signed(float(step_reward or 0))}'
            f'{SEP}cumulative {signed(float(cumulative or 0))}{ended}</div>')


def action_label(action: dict | None) -> str:
    """``query_logs \u2192 orders (level=ERROR)`` with long parameter values shortened."""
    if not isinstance(action, dict):
        return f'<span class="srl-mono">{plain(action)}</span>'
    label = plain(action.get("action_type"))
    if action.get("target_service"):
        label += f' \u2192 {plain(action["target_service"])}'
    params = action.get("parameters") or {}
    if isinstance(params, dict) and params:
        shown = []
        for key, value in params.items():
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            if len(text) > 60:
                text = text[:57] + "\u2026"
            shown.append(f"{plain(key)}={plain(text)}")
        label += f' <span class="srl-meta">({", ".join(shown)})</span>'
    return f'<span class="srl-mono"><b>{label}</b></span>'


def last_action(action: dict | None, obs: dict) -> str:
    """The action just taken, its one-line message, and its result rendered for people."""
    head = f"<h3>Last action: {action_label(action)}</h3>" if action else "<h3>Episode start</h3>"
    message = f'<div class="srl-meta">{plain(obs.get("action_message"))}</div>'
    body = result_once(obs, skip=("belief",))  # the belief pane has the belief
    if isinstance(action, dict) and isinstance(action.get("parameters"), dict):
        diff = action["parameters"].get("diff")
        if isinstance(diff, str) and diff:
            body += "<h3>Proposed patch</h3>" + diff_block(diff)
    return head + message + body
