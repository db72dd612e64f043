"""Notebook widgets: the episode stepper and the trajectory viewer (:mod:`.viewers`), built
from the HTML panes of :mod:`.render`. A front end: nothing below imports it.

The widgets load lazily from :mod:`.viewers` (ipywidgets only on first use), so
``from srelib.widgets import EpisodeStepper`` reads as it always has.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_EXPORTS = {name: "srelib.widgets.viewers"
            for name in ("MANUAL", "replay", "to_html", "EpisodeStepper", "TrajectoryViewer")}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.widgets", _EXPORTS, globals())
