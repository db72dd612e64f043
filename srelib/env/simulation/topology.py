"""Walking the service dependency graph (``actions.DEPENDS_ON`` and its inverse)."""

from __future__ import annotations

from typing import Iterable, Mapping

from srelib.env.actions import DEPENDED_BY, DEPENDS_ON


def _reachable(start: Iterable[str], edges: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Every service reachable from ``start`` along ``edges``, nearest first, ``start`` left out."""
    start = list(start)
    seen: list[str] = []
    frontier = [n for s in start for n in edges.get(s, ())]
    while frontier:
        service = frontier.pop(0)
        if service not in seen and service not in start:
            seen.append(service)
            frontier += edges.get(service, ())
    return seen


def upstream_of(*services: str) -> list[str]:
    """Every service that ``services`` call, directly or not, nearest first."""
    return _reachable(services, DEPENDS_ON)


def downstream_of(*services: str) -> list[str]:
    """Every service that calls ``services``, directly or not, nearest first: those that feel
    a fault in them."""
    return _reachable(services, DEPENDED_BY)
