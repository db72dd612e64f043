"""The simulation (phase 1): the seven services' metrics, logs, deploys, alerts and cascade, the
incident clock, and the hand-written scenarios it plays (``scenario_data/``)."""

from srelib.env.support.lazy import lazy_modules

__all__ = ["deploy_history", "deploy_notes", "incident_clock", "infra", "phase1", "scenarios",
           "service_logs", "state", "topology"]
__getattr__ = lazy_modules(__name__, __all__)
