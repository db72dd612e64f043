"""Plots for notebooks: scores (:mod:`.scores`), what episodes did (:mod:`.outcomes`), the
oracle-P1 ceiling and repair ladder (:mod:`.ceiling`) and behaviour metrics (:mod:`.behaviour`),
in the colours of :mod:`.style`. A front end: it reads frames and tables, and nothing below
imports it.

Every frame plot takes a results frame (or a ceiling table) and returns a
``matplotlib.figure.Figure``, built without pyplot, so nothing needs a display and nothing is
shown twice in a notebook: the returned Figure renders inline, and ``fig.savefig("x.png")``
writes a PNG through the Agg canvas on any machine. Each policy keeps one colour in every plot
(:func:`policy_colours`). Titles say how many episodes each mark summarises and from which
pools; a task named ``h/...`` is held out (pool D).

The plots load lazily (matplotlib only on first use), so
``from srelib import plots; plots.score_distributions(frame)`` reads as it always has.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_MODULES = {
    "srelib.plots.style": ("OKABE_ITO", "POLICY_COLOURS", "RESOLVED", "HELD_OUT_NOTE", "colour",
                           "policy_colours"),
    "srelib.plots.scores": ("KINDS", "SCORE_COLUMNS", "score_distributions", "component_breakdown",
                            "paired_difference"),
    "srelib.plots.outcomes": ("resolved_rates", "localisation_vs_score", "steps_per_phase",
                              "parse_failure_rate", "has_parse_failures"),
    "srelib.plots.ceiling": ("ceiling_gap", "repair_ladder"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.plots", _EXPORTS, globals())
