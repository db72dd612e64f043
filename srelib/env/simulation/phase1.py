"""Phase 1: the on-call engineer's actions over the simulated infrastructure.

:class:`Operations` is to phase 1 what :class:`~srelib.env.phase2.workspace.Workspace` is to phase 2.
It checks what the system's state allows (a rollback needs an earlier deploy; a service that
is down cannot be scaled), lists the valid phase-1 actions, and runs diagnostics, remediations
and root-cause declarations on parameters already cleaned by
:func:`srelib.env.actions.clean_parameters`. Rewards, repeats and the step budget belong to
:class:`~srelib.env.core.IncidentEnv`.
"""

from __future__ import annotations

from srelib.env.actions import (ACTION_SPECS, DEPENDED_BY, DEPENDS_ON, PHASE1_ACTIONS,
                      PHASE1_REMEDIATION, SERVICES, ActionType)
from .infra import Infrastructure
from srelib.env.support.memo import byte_lru
from srelib.env.simulation.state import DOWN

MAX_TEXT = 100_000  # characters of a declared root cause kept in the trajectory
_TARGETED = tuple(a for a in PHASE1_ACTIONS if ACTION_SPECS[a].targeted)


@byte_lru(1 << 20)  # ~5 kB an entry; the 2**15 keys of 7 services would take ~150 MB
def _valid_actions(rollbackable: tuple[bool, ...], down: tuple[bool, ...],
                   transition: bool) -> tuple[str, ...]:
    out = [ActionType.VIEW_ALERTS.value]
    for action in _TARGETED:
        for i, service in enumerate(SERVICES):
            if (action is ActionType.ROLLBACK_DEPLOY and not rollbackable[i]) or (
                    action is ActionType.SCALE_SERVICE and down[i]):
                continue
            out.append(f"{action.value}:{service}")
    out.append(ActionType.DECLARE_ROOT_CAUSE.value)
    if transition:
        out.append(ActionType.TRANSITION_TO_PHASE2.value)
    return tuple(out)


def _service(target: str | None) -> str:
    """The service a targeted action names (the environment has validated it)."""
    if target is None:
        raise ValueError("a targeted phase-1 action needs a target_service")
    return target


class Operations:
    """Phase-1 actions over one episode's :class:`~srelib.env.simulation.infra.Infrastructure`."""

    def __init__(self, infra: Infrastructure) -> None:
        self.infra = infra

    def check(self, action: ActionType, target: str | None) -> str | None:
        """Why the system's state refuses ``action`` on ``target`` now, or None."""
        if action is ActionType.ROLLBACK_DEPLOY and not self.infra.can_rollback(_service(target)):
            return f"{target} has no earlier deploy to roll back to"
        if action is ActionType.SCALE_SERVICE and \
                self.infra.statuses[SERVICES.index(_service(target))] == DOWN:
            return f"cannot scale {target} while it is down"
        return None

    def valid_actions(self, transition: bool) -> tuple[str, ...]:
        """The phase-1 entries of ``valid_actions`` (``"action:service"`` for targeted ones),
        with ``transition_to_phase2`` when the episode has a phase 2."""
        infra = self.infra
        return _valid_actions(tuple(infra.can_rollback(s) for s in SERVICES),
                              tuple(status == DOWN for status in infra.statuses), transition)

    def execute(self, action: ActionType, target: str | None, params: dict,
                final: bool = False) -> tuple[dict, str, dict | None]:
        """Run one phase-1 action; the clock advances a minute. Returns ``(result, message,
        effect)``: ``effect`` is what the trajectory records of a remediation (faults cleared,
        deploy rolled back to) or a declaration (what was declared), None for a diagnostic.
        ``final`` says that a declaration ends the episode, which its result then says."""
        infra = self.infra
        if action in PHASE1_REMEDIATION:
            svc = _service(target)
            if action is ActionType.RESTART_SERVICE:
                outcome = infra.restart(svc)
            elif action is ActionType.ROLLBACK_DEPLOY:
                outcome = infra.rollback(svc)
            else:
                outcome = infra.scale(svc, params["replicas"])
            infra.tick()
            effect = {"cleared_faults": outcome.cleared, "rolled_back_to": outcome.rolled_back_to}
            return {"service": target, "outcome": outcome.message}, outcome.message, effect
        infra.tick()
        if action is ActionType.DECLARE_ROOT_CAUSE:
            effect = {"root_cause": params["root_cause"][:MAX_TEXT], "service": params["service"],
                      "fault_class": params["fault_class"]}
            result = {"declared": effect, "message": "Root cause recorded." + (
                "" if final else " A later declaration replaces it; hand over to phase 2 "
                                 "when ready.")}
            return result, f"Root cause declared: {effect['root_cause'][:120]}", effect
        result, message = self._diagnose(action, target, params)
        return result, message, None

    def _diagnose(self, action: ActionType, target: str | None, params: dict) -> tuple[dict, str]:
        infra = self.infra
        if action is ActionType.VIEW_ALERTS:
            alerts = infra.alerts()
            return {"alerts": alerts, "count": len(alerts)}, f"{len(alerts)} alert(s) firing"
        svc = _service(target)
        if action is ActionType.QUERY_LOGS:
            logs = infra.logs(svc, params["level"], params["keyword"], params["limit"])
            return ({"service": target, "logs": logs, "count": len(logs)},
                    f"{len(logs)} log line(s) from {target}")
        if action is ActionType.CHECK_METRICS:
            points = infra.metric_history(svc)
            return ({"service": target, "metrics": points, "data_points": len(points)},
                    f"{len(points)} metric points for {target}")
        if action is ActionType.CHECK_DEPENDENCIES:
            deps = {"depends_on": list(DEPENDS_ON[svc]), "depended_by": list(DEPENDED_BY[svc])}
            return {"service": target, "dependencies": deps}, f"Dependencies of {target}"
        if action is ActionType.CHECK_DEPLOY_HISTORY:
            deploys = infra.deploy_history(svc)
            return ({"service": target, "deploys": deploys, "count": len(deploys)},
                    f"{len(deploys)} deploy(s) of {target}")
        check = infra.health_check(svc)
        return {"service": target, "health_check": check}, f"{target} is {check['status']}"
