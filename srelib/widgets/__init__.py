"""Notebook widgets: the episode stepper (:mod:`.stepper`) and the trajectory viewer
(:mod:`.viewer`), built from the HTML panes of :mod:`.markup`, :mod:`.observation_panes`,
:mod:`.result_panes` and :mod:`.episode_panes`; :mod:`.playback` gives one record's panes (the
viewer's, and the run report's) and writes an episode as one static page. A front end: nothing below imports it.

Only core ipywidgets are used (they work in Colab without a custom widget manager), imported
when a widget is built, never at module import, so ``from srelib.widgets import EpisodeStepper``
reads as it always has. Every widget's display data carries a one-line ``text/plain`` summary
that nbval can compare.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_EXPORTS = {"MANUAL": "srelib.widgets.stepper", "EpisodeStepper": "srelib.widgets.stepper",
            "TrajectoryViewer": "srelib.widgets.viewer",
            "replay": "srelib.widgets.playback", "to_html": "srelib.widgets.playback",
            "record_panes": "srelib.widgets.playback", "RECORD_PANES": "srelib.widgets.playback"}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.widgets", _EXPORTS, globals())
