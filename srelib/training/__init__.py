"""Training on the environment: the TRL environment adapter, SFT warm start and GRPO, episodes
as training rows (:mod:`.trajectories`) and the tiny offline model the CPU runs use
(:mod:`.tiny_model`). A front end: nothing below imports it.

Training needs the ``train`` extra (``trl``, ``peft``, ``datasets``); everything loads lazily.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_EXPORTS = {
    "TaskDistribution": "srelib.training.environment",
    "IncidentToolEnv": "srelib.training.environment",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.training", _EXPORTS, globals())
