"""Training on the environment: the TRL environment adapter, SFT warm start and GRPO.

Everything here needs the ``train`` extra (``trl``, ``peft``, ``datasets``) and loads lazily.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_EXPORTS = {
    "TaskDistribution": "srelib.training.environment",
    "IncidentToolEnv": "srelib.training.environment",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.training", _EXPORTS, globals())
