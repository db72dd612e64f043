"""The structured belief that phase 1 hands to phase 2."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from srelib.env.support.json_copy import json_copy


@dataclass
class BeliefState:
    """What the phase-1 agent believes when it hands over (the reference's eight fields)."""

    suspected_service: str | None = None
    suspected_fault_class: str | None = None
    service_confidence: float = 0.0
    fault_confidence: float = 0.0
    evidence_gaps: list[str] = field(default_factory=list)
    estimated_p2_cost: str = "unknown"  # low / medium / high / unknown
    decision: str = "continue"  # continue / transition / abort
    reasoning: str = ""


BELIEF_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(BeliefState))


def belief_dict(belief: BeliefState) -> dict:
    """``dataclasses.asdict(belief)``, for a fraction of its cost (no copy protocol)."""
    return {name: json_copy(getattr(belief, name)) for name in BELIEF_FIELDS}


def coerce_belief(raw: object) -> tuple[BeliefState | None, str | None]:
    """Turn an agent's belief dict into a BeliefState, or say what is wrong with it.

    Returns ``(belief, None)`` on success and ``(None, reason)`` on failure; never raises.
    ``None`` means an empty belief. Unknown keys are ignored.
    """
    if raw is None:
        return BeliefState(), None
    if not isinstance(raw, dict):
        return None, f"belief must be a dict with keys {list(BELIEF_FIELDS)}, got {type(raw).__name__}"
    b = BeliefState()
    for key in ("suspected_service", "suspected_fault_class"):
        v = raw.get(key)
        if v is not None and not isinstance(v, str):
            return None, f"belief.{key} must be a string or null"
        setattr(b, key, v.strip() or None if v else None)
    for key in ("service_confidence", "fault_confidence"):
        v = raw.get(key, 0.0)
        if v is None:
            v = 0.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return None, f"belief.{key} must be a number between 0 and 1"
        setattr(b, key, min(1.0, max(0.0, float(v))))
    gaps = raw.get("evidence_gaps", [])
    if isinstance(gaps, str):
        gaps = [g.strip() for g in gaps.split(",")]
    if not isinstance(gaps, list) or not all(isinstance(g, str) for g in gaps):
        return None, "belief.evidence_gaps must be a list of strings"
    b.evidence_gaps = [g for g in gaps if g and g.lower() != "none"]
    for key in ("estimated_p2_cost", "decision", "reasoning"):
        v = raw.get(key, getattr(b, key))
        if v is None:
            continue
        if not isinstance(v, str):
            return None, f"belief.{key} must be a string"
        setattr(b, key, v)
    return b, None
