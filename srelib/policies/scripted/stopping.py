"""Phase-1 policies that stop investigating once their confidence crosses a threshold.

:class:`ThresholdStopPhase1Policy` investigates like :class:`HeuristicPhase1Policy`, but after
every piece of evidence it asks itself how sure it is of a suspect. Once that confidence reaches
its threshold it stops reading, remediates, declares and hands over. A low threshold stops early
on thin evidence (an innocent recent deploy is enough to convince it); a high one reads on. The
threshold can be one number or one per task, as :func:`srelib.analysis.ablations.tune_thresholds`
chooses them.
"""

from __future__ import annotations

import functools
from typing import Mapping

from srelib.policies.scripted.heuristic import HeuristicPhase1Policy

#: The stages in which the heuristic is still gathering evidence.
_GATHERING = ("investigate", "upstream", "confirm")


class ThresholdStopPhase1Policy(HeuristicPhase1Policy):
    """Hand over as soon as ``confidence()`` reaches ``threshold`` (a number, or a mapping of
    task name to number with ``default`` for the tasks it lacks)."""

    def __init__(self, threshold: float | Mapping[str, float] = 0.7, *, default: float = 0.7,
                 **heuristic_options):
        thresholds = threshold.values() if isinstance(threshold, Mapping) else [threshold]
        if not all(0.0 <= float(t) <= 1.0 for t in [*thresholds, default]):
            raise ValueError(f"thresholds must lie in [0, 1], got {threshold!r}")
        self.threshold, self.default = threshold, default
        self._acting_task: str | None = None
        super().__init__(**heuristic_options)

    @property
    def name(self) -> str:  # type: ignore[override]
        if isinstance(self.threshold, Mapping):
            return "stop@tuned"
        return f"stop@{self.threshold:g}"

    def threshold_for(self, task_name: str | None) -> float:
        if isinstance(self.threshold, Mapping):
            return float(self.threshold.get(task_name, self.default))
        return float(self.threshold)

    def confidence(self) -> float:
        """How sure the evidence read so far makes it of its best suspect and fault, in [0, 1]:
        the handed-over service confidence, weighted by the share of fault evidence."""
        saved = self._suspect, list(self._evidence), list(self._gaps)
        self._choose_suspect()
        belief_conf = self._belief().service_confidence if self._suspect else 0.0
        fault_share = self._guess_fault()[1]
        self._suspect, self._evidence, self._gaps = saved
        return round(belief_conf * (0.5 + 0.5 * fault_share), 3)

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        self._acting_task = task_name
        return super().__call__(observation, phase, task_name)

    def _next(self, observation: dict) -> dict:
        if self._stage in _GATHERING and self.confidence() >= self.threshold_for(self._acting_task):
            self._plan.clear()
            self._choose_suspect()
            self._stage = "doubt"  # the next planning pass remediates, declares and hands over
        return super()._next(observation)


def _stop_then(threshold, phase2_policy):
    """``ThresholdStopPhase1Policy(threshold)`` joined to a fresh ``phase2_policy``."""
    from srelib.policies.base import compose

    return compose(functools.partial(ThresholdStopPhase1Policy, threshold), phase2_policy)
