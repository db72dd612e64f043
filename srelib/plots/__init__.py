"""Plots for notebooks: evaluation frames (:mod:`.frames`) and behaviour metrics
(:mod:`.behaviour`). A front end: it reads frames and tables, and nothing below imports it.

The frame plots load lazily from :mod:`.frames` (matplotlib only on first use), so
``from srelib import plots; plots.score_distributions(frame)`` reads as it always has.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_FRAMES = ("OKABE_ITO", "KINDS", "SCORE_COLUMNS", "POLICY_COLOURS", "RESOLVED", "HELD_OUT_NOTE",
           "colour", "policy_colours", "score_distributions", "component_breakdown",
           "resolved_rates", "paired_difference", "ceiling_gap", "localisation_vs_score",
           "repair_ladder", "steps_per_phase", "parse_failure_rate", "has_parse_failures")
_EXPORTS = {name: "srelib.plots.frames" for name in _FRAMES}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.plots", _EXPORTS, globals())
