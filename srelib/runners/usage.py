"""Token and latency accounting: chat policies append one record per model call to
``policy.usage``; runners read the records an episode (or a batch lane) caused."""

from __future__ import annotations

from typing import Any, Sequence


def usage_mark(policy: Any) -> int | None:
    """Where ``policy.usage`` ends now (None: the policy records no usage)."""
    usage = getattr(policy, "usage", None)
    return len(usage) if isinstance(usage, list) else None


def usage_since(policy: Any, mark: int | None) -> tuple[int | None, float | None]:
    """Tokens and latency of the calls ``policy`` recorded since ``mark``."""
    usage = getattr(policy, "usage", None)
    if mark is None or not isinstance(usage, list):
        return None, None
    return tokens_and_latency(usage[mark:])


def tokens_and_latency(records: Sequence) -> tuple[int, float]:
    """Total tokens and seconds of call records."""
    calls = [u for u in records if isinstance(u, dict)]
    tokens = sum(int(u.get("total_tokens") or (u.get("prompt_tokens") or 0)
                     + (u.get("completion_tokens") or 0)) for u in calls)
    latency = sum(float(u.get("latency_s") or 0.0) for u in calls)
    return tokens, latency


def usage_per_item(policy: Any, mark: int | None, count: int) -> list[tuple[int, float] | None]:
    """Per item of a batch call, the tokens and latency of the records since ``mark`` that
    served it: a record's ``item`` index (records without one come in batch order)."""
    totals: list[tuple[int, float] | None] = [None] * count
    usage = getattr(policy, "usage", None)
    if mark is None or not isinstance(usage, list):
        return totals
    for position, record in enumerate(usage[mark:]):
        item = record.get("item", position) if isinstance(record, dict) else position
        if not isinstance(item, int) or not 0 <= item < count:
            continue
        tokens, latency = tokens_and_latency([record])
        before = totals[item] or (0, 0.0)
        totals[item] = (before[0] + tokens, before[1] + latency)
    return totals
