"""What a saved run states that no replay re-derives, named by the verifier itself.

Every field of a run is either re-derived by :func:`srelib.results.verify.verify_run` (the plan,
the scoring settings, the registry names, the srelib version, each episode's records, ending,
counts, score and a registered policy's ``oracle`` flag) or named here as the run's word, with
its value: the provenance (``created``, ``started``, ``git``, the other packages' versions), how
the run was split over workers, what each episode cost (``tokens``, ``latency_s``, ``wall_s``)
and the text of a failure. The list is srelib's, never the run's own ``unverifiable`` list, which
the writer controls. The sandbox fields are re-derived: the replay grades patches on this
machine, so a run that says it graded them otherwise is reported with both. A field or file no
check knows is named too, so an addition a reader might take for a checked fact cannot pass
unremarked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from srelib.results.settings import section

#: ``run.json``'s top-level fields verify re-derives or checks (or, for ``unverifiable``,
#: replaces with its own list).
CHECKED = ("config", "plan", "weights", "versions", "isolation", "sandbox", "verified",
           "unverifiable")
#: Its provenance fields, reported as stated.
PROVENANCE = ("created", "started", "git")
#: ``config``'s fields verify re-derives or checks (the runner checks the grid ones).
CONFIG_CHECKED = ("max_steps", "null_repair", "registered", "policies", "tasks", "pools",
                  "seeds", "mode")
#: ``config``'s fields that change no score: how the run was split over processes.
CONFIG_STATED = ("batch_size", "workers")
#: Each episode's fields no replay re-derives (``oracle`` is re-derived for registered
#: policies, and a claim for the others, by :mod:`srelib.runners.rerun`).
EPISODE_STATED = ("tokens", "latency_s", "wall_s", "error")
#: The files a run directory holds that verify reads (or that the writer and ``srelib report``
#: keep there: the lock, the plots folder).
RUN_FILES = ("run.json", "episodes.jsonl", "episodes.jsonl.lock", "run.sig", "plots")


def _total(episodes: list, field: str) -> str:
    values = [getattr(e, field, None) for e in episodes]
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return f"{field} total {round(sum(numbers), 3)}" if numbers else f"{field} none"


def stated_claims(manifest: Mapping[str, Any], episodes: list) -> list[str]:
    """The run's fields no replay re-derives, each named with its value (see the module doc).

    Args:
        manifest: the parsed ``run.json`` (a file from elsewhere may lack any key).
        episodes: the run's stored :class:`~srelib.results.store.Episode` objects.

    Returns:
        Sentences: the provenance, the workers split, the episodes' costs and failure texts,
        and any field the verifier does not know.
    """
    claims = []
    git = section(manifest, "git")
    versions = {k: v for k, v in section(manifest, "versions").items() if k != "srelib"}
    claims.append(f"provenance is the run's word (no replay re-derives it; sign the run to hold "
                  f"it): created={manifest.get('created')!r}, started={manifest.get('started')!r}, "
                  f"git commit={git.get('commit')!r} dirty={git.get('dirty')!r}, "
                  f"{len(versions)} other package versions")
    config = section(manifest, "config")
    split = {k: config.get(k) for k in CONFIG_STATED if k in config}
    if split:
        claims.append(f"how the run was split over processes is the run's word (it changes no "
                      f"score): {', '.join(f'{k}={v!r}' for k, v in split.items())}")
    failed = sum(1 for e in episodes if getattr(e, "error", None))
    costs = ", ".join(_total(episodes, f) for f in EPISODE_STATED[:3])
    claims.append(f"each episode's {', '.join(EPISODE_STATED)} are the run's word (no replay "
                  f"re-derives them): {costs}; {failed} failure text(s)")
    unknown = sorted(set(manifest) - set(CHECKED) - set(PROVENANCE)) + sorted(
        f"config.{k}" for k in set(config) - set(CONFIG_CHECKED) - set(CONFIG_STATED))
    if unknown:
        claims.append(f"run.json holds fields no check covers, the run's word: {unknown}")
    return claims


def sandbox_claims(manifest: Mapping[str, Any]) -> list[str]:
    """The sandbox the run says graded its patches, against the one the replay graded them in.

    The replay re-grades every patch on this machine, so the scores verified are the replay's;
    a run that states another isolation level, sandbox mode or verdict is reported with both.

    Args:
        manifest: the parsed ``run.json``.

    Returns:
        One sentence when the run's sandbox fields differ from the replay's, else none.
    """
    from srelib.env.grading.sandbox.isolate import HOLDING_LEVELS, isolation_level, sandbox_mode

    level = isolation_level()
    replay = {"isolation": level, "sandbox": sandbox_mode(), "verified": level in HOLDING_LEVELS}
    said = {k: manifest.get(k) for k in replay}
    if said == replay:
        return []
    shown = lambda fields: ", ".join(f"{k}={v!r}" for k, v in fields.items())  # noqa: E731
    return [f"run.json says its patches were graded under {shown(said)}; the replay graded them "
            f"under {shown(replay)}: the scores verified are the replay's"]


def file_claims(run: str | os.PathLike) -> list[str]:
    """Files in the run directory no check reads, and run files that are links elsewhere.

    Args:
        run: the run directory.

    Returns:
        Sentences naming them; none for a directory that holds only the run's files.
    """
    run = Path(run)
    if not run.is_dir():
        return []
    extra = sorted(p.name for p in run.iterdir() if p.name not in RUN_FILES)
    links = sorted(name for name in RUN_FILES if (run / name).is_symlink())
    claims = []
    if extra:
        claims.append(f"the run folder holds files no check reads (nothing they say is "
                      f"verified): {extra}")
    if links:
        claims.append(f"{links} are links to {[os.readlink(run / n) for n in links]}: their bytes "
                      "were checked, not where they live")
    return claims
