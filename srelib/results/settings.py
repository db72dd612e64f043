"""The scoring settings a run was made under, against srelib's own.

A score means what srelib's grading makes of an episode played to its end: the weights of
``grading.WEIGHTS``, no runner cap on policy calls (only the environment's own step budget), and
no ``r_cross`` unless the null-handoff repair it subtracts is known, over whole suites or splits
(a hand-picked task list is shown as one, :func:`srelib.results.grid.hand_picked`). A run may be made under
other settings (``evaluate(max_steps=...)``, ``null_repair=...``); its manifest says which, and
every place that shows the run (``srelib verify``, ``srelib report``, the frame of
``load_run``) says it was scored under non-standard settings. The replay checks each episode
against the settings the run states, so editing them in ``run.json`` either breaks the replay or
shows here.
"""

from __future__ import annotations

from typing import Any, Mapping

from srelib.results.grid import hand_picked


def section(record: Any, name: str) -> Mapping[str, Any]:
    """``record[name]`` when ``record`` and it are mappings, else ``{}`` (a manifest from
    elsewhere may lack any key, or hold anything under it).

    Args:
        record: a parsed ``run.json`` or a part of it.
        name: the key.

    Returns:
        The mapping under ``name``, or an empty one.
    """
    value = record.get(name) if isinstance(record, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def standard_weights() -> dict[str, float]:
    """The component weights of srelib's grading (``grading.WEIGHTS``)."""
    from srelib.env.grading.score import WEIGHTS

    return dict(WEIGHTS)


def nonstandard_settings(manifest: Mapping[str, Any]) -> list[str]:
    """Each way ``manifest`` (a parsed ``run.json``) was scored other than srelib scores, as a
    sentence; empty for a run under srelib's standard settings.

    Args:
        manifest: the run's manifest (a file from elsewhere may lack any key).

    Returns:
        Sentences naming the setting, its value and srelib's.
    """
    config = section(manifest, "config")
    found = []
    cap = config.get("max_steps")
    if cap not in (None, 0):
        found.append(f"max_steps={cap!r}: a runner cap on policy calls (srelib scores episodes "
                     "played to the environment's own step budget)")
    null = config.get("null_repair")
    if null:
        shown = null if isinstance(null, Mapping) and len(null) <= 4 else f"{len(null)} tasks"
        found.append(f"null_repair={shown}: r_cross is measured against null-handoff repairs "
                     "the run states, which srelib does not re-derive")
    weights = manifest.get("weights")
    if weights is not None and weights != standard_weights():
        found.append(f"weights={weights!r}: srelib grades with {standard_weights()!r}")
    planned = section(manifest, "plan").get("episodes")
    picked = hand_picked(planned) if isinstance(planned, list) else None
    return found + ([picked] if picked else [])


def version_claims(manifest: Mapping[str, Any]) -> list[str]:
    """What the manifest says made the run that this srelib cannot confirm: another srelib
    version than the one replaying it.

    Args:
        manifest: the run's manifest.

    Returns:
        Sentences, empty when the run names this srelib's version.
    """
    from srelib._version import __version__

    said = section(manifest, "versions").get("srelib")
    if said == __version__:
        return []
    return [f"the run says srelib {said!r} made it; srelib {__version__} replayed it, so its "
            "episodes are checked against what this version plays"]
