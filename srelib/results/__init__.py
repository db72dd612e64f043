"""Results: the run store and its frames (:mod:`.store`), the replay that verifies stored
episodes and runs (:mod:`.verify`), the grid a plan must be (:mod:`.grid`), the scoring
settings a run was made under (:mod:`.settings`), run signatures (:mod:`.signing`), the
localisation columns of a row (:mod:`.localisation`), and what made a stored output
(:mod:`.provenance`, :mod:`.saving`).

The run store's names load lazily, so ``from srelib.results import Episode`` reads as it did
when the store was this module. ``load_run`` re-runs scripted policies, which only a runner
may do: it is :func:`srelib.load_run` (:mod:`srelib.runners.runs`).
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_STORE = ("RUN_FILE", "EPISODES_FILE", "LOCK_FILE", "KEY_COLUMNS", "COMPONENTS", "COLUMNS",
          "UNVERIFIABLE", "Episode", "plan_digest", "count_parse_failures", "frame_from_episodes",
          "CorruptLinesWarning", "RunStore", "iter_episodes", "load_episodes", "load_episode",
          "run_directory", "load_config", "package_versions", "git_revision", "RunManifest",
          "RunPlan")
_EXPORTS = {name: "srelib.results.store" for name in _STORE}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.results", _EXPORTS, globals())
