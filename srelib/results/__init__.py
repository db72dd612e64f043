"""Results: the run store and its frames (:mod:`.store`), the replay that verifies stored
episodes (:mod:`.verify`), a run loaded as a frame (:mod:`.runs`), the localisation columns of a
row (:mod:`.localisation`), and what made a stored output (:mod:`.provenance`, :mod:`.saving`).

The run store's names (and ``load_run``) load lazily, so ``srelib.results.load_run`` and
``from srelib.results import Episode`` read as they did when the store was this module.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_STORE = ("RUN_FILE", "EPISODES_FILE", "LOCK_FILE", "KEY_COLUMNS", "COMPONENTS", "COLUMNS",
          "UNVERIFIABLE", "Episode", "plan_digest", "count_parse_failures", "frame_from_episodes",
          "CorruptLinesWarning", "RunStore", "iter_episodes", "load_episodes", "load_episode",
          "run_directory", "load_config", "package_versions", "git_revision", "RunManifest",
          "RunPlan")
_EXPORTS = {**{name: "srelib.results.store" for name in _STORE}, "load_run": "srelib.results.runs"}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.results", _EXPORTS, globals())
