"""The incident day's clock: absolute minutes of the simulation as ISO timestamps."""

from __future__ import annotations

from datetime import date, timedelta

INCIDENT_DATE = date(2025, 1, 15)
#: The page fires at a drawn minute of the incident day from PAGE_MINUTE on, at most PAGE_SPREAD - 1
#: minutes later; every pre-page event moves back by up to MAX_SHIFT minutes with it.
PAGE_MINUTE, PAGE_SPREAD, MAX_SHIFT = 14 * 60 + 25, 31, 3

# day -> its date; bounded by construction: the days a scenario's minutes span (its deploy
# history and the episode's step budget), a few dozen of ~60 bytes
_DAY_CACHE: dict[int, str] = {}


def timestamp(minute: int, second: int = 0) -> str:
    """ISO timestamp of an absolute minute of the incident day (negative: days before)."""
    day, rem = divmod(minute, 1440)
    prefix = _DAY_CACHE.get(day)
    if prefix is None:
        prefix = _DAY_CACHE[day] = (INCIDENT_DATE + timedelta(days=day)).isoformat()
    return f"{prefix}T{rem // 60:02d}:{rem % 60:02d}:{second:02d}Z"
