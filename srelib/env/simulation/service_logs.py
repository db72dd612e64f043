"""The log lines a service writes each minute: seeded noise and red herrings, the lines of its
live conditions, and failed or slow calls to unhealthy callees.

A line is ``(minute, second, level, message, trace_id)``; which lines appear at a minute is
drawn from a fixed block of the service's random bytes, so any minute's lines can be
computed on their own, in any order.
"""

from __future__ import annotations

import random

from srelib.env.actions import SERVICES
from .scenarios import METRIC_NAMES
from srelib.env.simulation.state import CALLEES, DOWN, HEALTHY, METRIC_INDEX, NO_MASKS, P99, Condition, Snapshot

_LOG_SLOTS = 128
_LOG_SLOT_BYTES = 8
# (level, template, only on a healthy service)
_NOISE_LOGS = (
    ("INFO", "Flushed access log buffer: {n} entries", False),
    ("INFO", "Health probe ok: all dependencies reachable", True),
    ("INFO", "Connection pool: {a} active, {b} idle, max 50", False),
    ("DEBUG", "Local cache hit ratio {r}%", False),
    ("INFO", "Job 'metrics_export' finished in {d}ms", False),
    ("DEBUG", "Upstream TLS session resumed in {d}ms", False),
    ("INFO", "Config watcher: no changes", False),
    ("INFO", "GC cycle freed {a}MB in {d}ms", False),
)
_HERRING_LOGS = (
    ("WARN", "DNS lookup for {other}.internal took {d}ms (threshold 100ms)"),
    ("WARN", "TLS certificate for {other}.internal expires in {k} days"),
    ("WARN", "Disk usage on the log volume at {k}%: rotation recommended"),
    ("ERROR", "Metrics export to the collector timed out after {d}ms"),
    ("WARN", "Background job 'cleanup_sessions' took {d}ms (expected < 500ms)"),
)
_HERRING_BYTE = 14  # a generic red herring appears when its byte is below this (about 5%/min)
_NOISE_BYTE = 102  # a noise line appears when its byte is below this (about 40%/min)


def log_entropy(seed: int) -> bytes:
    """The block of random bytes a service's generated lines are drawn from."""
    return random.Random(seed).randbytes(_LOG_SLOTS * _LOG_SLOT_BYTES)


def generated_lines(i: int, m: int, ent: bytes, snap: Snapshot, conditions: list[Condition],
                    out: list) -> None:
    """Append the noise, red herrings, condition lines and upstream-failure lines of service i
    at minute m: ``ent`` is its :func:`log_entropy`, ``snap`` every service at m and
    ``conditions`` those of service i."""
    off = (m % _LOG_SLOTS) * _LOG_SLOT_BYTES
    b0, b1, b2, b3, b4, b5, b6, b7 = ent[off:off + _LOG_SLOT_BYTES]
    trace = f"trace-{(b2 << 16) | (b3 << 8) | b6:06x}"
    values, statuses = snap.values, snap.statuses
    if b0 < _NOISE_BYTE:
        level, template, healthy_only = _NOISE_LOGS[b1 % len(_NOISE_LOGS)]
        if not (healthy_only and statuses[i]):
            out.append((m, b4 % 60, level, template.format(
                n=200 + 37 * b2, a=2 + b3 % 30, b=b6 % 20, r=80 + b2 % 19, d=5 + 3 * b3), None))
    if b5 < _HERRING_BYTE:
        level, template = _HERRING_LOGS[b1 % len(_HERRING_LOGS)]
        out.append((m, b7 % 60, level, template.format(
            other=SERVICES[b3 % len(SERVICES)], d=150 + 11 * b2, k=3 + b6 % 80),
            trace if level == "ERROR" else None))
    masks = NO_MASKS
    second = b4
    for c in conditions:
        if c.onset > m or (c.cleared_at is not None and m >= c.cleared_at):
            continue
        masks = masks | c.masks
        if c.spec.logs and (not c.reliefs or c.mult(m) >= 0.75):
            second = _condition_lines(c, m, values[i], (b2, b3, b6, b7), second, trace, out)
    for d in CALLEES[i]:
        st = statuses[d]
        if st == HEALTHY or d in masks:
            continue
        name = SERVICES[d]
        if st == DOWN:
            out.append((m, b7 % 60, "ERROR", f"Call to {name} failed: HTTP 503 from upstream, "
                        f"{20 + b2 % 180} requests failed in the last minute", trace))
        else:
            out.append((m, b7 % 60, "WARN", f"Slow responses from {name}: upstream p99 "
                        f"{values[d][P99]:.0f}ms over the last minute", None))


def _condition_lines(c: Condition, m: int, v, fill_bytes, second: int, trace: str, out: list) -> int:
    """Append the lines condition c emits at minute m; returns the next free second."""
    age = m - c.onset
    stage = "cause_cleared" if c.cause_cleared(m) else "cause_active"
    fill = None
    for t in c.spec.logs:
        if age % t.every or (t.stage and t.stage != stage):
            continue
        if t.when is not None:
            metric, op, threshold = t.when
            x = v[METRIC_INDEX[metric]]
            if (x <= threshold) if op == ">" else (x >= threshold):
                continue
        if fill is None:
            b2, b3, b6, b7 = fill_bytes
            peers = c.spec.peers
            fill = dict(zip(METRIC_NAMES, v), pause_ms=200 + 3 * b2, count=10 + b3,
                        ms=1000 + 40 * b6, trace=trace, peer=peers[b7 % len(peers)] if peers else "")
        second += 7
        out.append((m, second % 60, t.level, t.message.format_map(fill),
                    trace if t.level in ("ERROR", "FATAL") else None))
    return second
