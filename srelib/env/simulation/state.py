"""The simulation's state: index tables of services and metrics, status levels, and its
records (a live Condition, a Snapshot of one minute, a RemediationResult)."""

from __future__ import annotations

from typing import get_args

from srelib.env.actions import DEPENDS_ON, SERVICES
from .scenarios import METRIC_NAMES, ConditionSpec
from srelib.env.types import Status

CPU, MEM, ERR, P50, P95, P99, RPS = range(7)
HEALTHY, DEGRADED, DOWN = 0, 1, 2
STATUS_NAMES: tuple[Status, ...] = get_args(Status)  # indexed by HEALTHY, DEGRADED, DOWN
RELIEF_MINUTES = 4  # a restart (or relieving scale) hides symptoms; they are back after this

SERVICE_INDEX = {s: i for i, s in enumerate(SERVICES)}
METRIC_INDEX = {m: i for i, m in enumerate(METRIC_NAMES)}
#: The services each service calls, by index, in SERVICES order.
CALLEES = tuple(tuple(SERVICE_INDEX[d] for d in DEPENDS_ON[s]) for s in SERVICES)
NO_MASKS: frozenset = frozenset()


class Condition:
    """A live condition: its spec plus onset, clearing minute and relief minutes."""

    __slots__ = ("spec", "svc", "onset", "cleared_at", "reliefs", "targets", "floor", "masks",
                 "benign", "cause")

    def __init__(self, spec: ConditionSpec, onset: int, cause: Condition | None):
        self.spec, self.svc, self.onset, self.cause = spec, SERVICE_INDEX[spec.service], onset, cause
        self.cleared_at: int | None = None
        self.reliefs: list[int] = []
        self.targets = tuple((METRIC_INDEX[m], float(v)) for m, v in spec.target)
        self.floor = {None: HEALTHY, "degraded": DEGRADED, "down": DOWN}[spec.status_floor]
        self.masks = frozenset(SERVICE_INDEX[s] for s in spec.masks)
        self.benign = spec.cause is None and not spec.cleared_by

    def active(self, m: int) -> bool:
        return self.onset <= m and (self.cleared_at is None or m < self.cleared_at)

    def cause_cleared(self, m: int) -> bool:
        return self.cause is not None and not self.cause.active(m)

    def mult(self, m: int) -> float:
        for r in reversed(self.reliefs):
            if r < m:
                return min(1.0, (m - r) / RELIEF_MINUTES)
        return 1.0


class Snapshot:
    """Every service at one minute: values (None = quiet baseline), statuses, alert count."""

    __slots__ = ("values", "statuses", "alerts")

    def __init__(self, values, statuses, alerts):
        self.values, self.statuses, self.alerts = values, statuses, alerts


class RemediationResult:
    """What a remediation did: the cleared condition ids, the rollback target, harm, relief."""

    __slots__ = ("cleared", "rolled_back_to", "harmful", "relieved", "message")

    def __init__(self, message, cleared=(), rolled_back_to=None, harmful=False, relieved=False):
        self.message, self.cleared, self.rolled_back_to = message, list(cleared), rolled_back_to
        self.harmful, self.relieved = harmful, relieved


