"""Loading a run as the tidy frame every analysis takes, verified on request: replayed through
the seeded environment (:func:`srelib.results.verify.verify_run`), its scripted policies
re-run from srelib's registry (:mod:`srelib.runners.rerun`), its signature checked, and the
grid its ``config`` states planned again (:func:`config_problems`)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping

from srelib.results.grid import episode_name
from srelib.results.settings import nonstandard_settings, section
from srelib.results.store import frame_from_episodes, load_config, load_episodes, run_directory
from srelib.results.verify import RunVerification
from srelib.results.verify import verify_run as replay_run
from srelib.runners.rerun import rerun_findings


def verify_run(path: str | os.PathLike, episodes: list | None = None, *,
               key: str | os.PathLike | None = None) -> RunVerification:
    """Everything :func:`srelib.results.verify.verify_run` checks, with each scripted policy's
    episodes re-run (:func:`srelib.runners.rerun.rerun_findings`).

    Args:
        path: a run directory (or its ``episodes.jsonl``).
        episodes: its episodes, if already loaded.
        key: a key file to check the run's signature with (``srelib eval --sign``), or None.

    Returns:
        The :class:`~srelib.results.verify.RunVerification`: problems, claims and the
        non-standard settings the run was scored under.
    """
    run = run_directory(path)
    check = replay_run(run, episodes, key=key, rerun=rerun_findings)
    try:
        manifest = load_config(run)
    except (ValueError, OSError):  # replay_run says the run has no plan
        return check
    return dataclasses.replace(check, problems=check.problems + tuple(config_problems(manifest)))


def config_problems(manifest: Mapping[str, Any]) -> list[str]:
    """The grid ``config`` states (its ``policies``, ``tasks``, ``pools``, ``seeds``, ``mode``),
    planned again as ``evaluate`` plans it, against the run's plan: every episode it plans must
    be planned (a resumed run's plan also holds earlier calls' episodes), so a config edited to
    name a wider grid, a whole suite or other seeds than the run played fails.

    Args:
        manifest: the parsed ``run.json``.

    Returns:
        Problems, naming the first episodes the config plans and the plan lacks.
    """
    from srelib.runners.rollout import plan

    config = section(manifest, "config")
    planned = section(manifest, "plan").get("episodes")
    if not isinstance(planned, list) or not all(k in config for k in ("tasks", "pools", "seeds")):
        return []  # no plan (replay_run says so) or a config from elsewhere: nothing to plan
    try:
        jobs = plan(list(config.get("policies") or ()), config["tasks"], config["pools"],
                    config["seeds"], config.get("mode"))
    except (ValueError, TypeError) as exc:
        return [f"run.json's config names a grid evaluate cannot plan: {exc}"]
    have = {tuple(k) for k in planned if isinstance(k, list)}
    lacking = [job.key for job in jobs if job.key not in have]
    if not lacking:
        return []
    shown = ", ".join(episode_name(k) for k in lacking[:3])
    return [f"run.json's config (tasks={config['tasks']!r}, pools={config['pools']!r}, "
            f"seeds={config['seeds']!r}) plans {len(lacking)} episode(s) the plan lacks: {shown}"]


def _shown(lines: tuple[str, ...] | list[str], limit: int = 5) -> str:
    return "; ".join(lines[:limit]) + ("; ..." if len(lines) > limit else "")


def load_run(path: str | os.PathLike, verify: bool = False,
             key: str | os.PathLike | None = None) -> Any:
    """The episodes of a run directory (or of its ``episodes.jsonl``) as a tidy DataFrame,
    one row per episode.

    ``frame.attrs["nonstandard"]`` lists the settings other than srelib's that the run was
    scored under (:mod:`srelib.results.settings`; empty for a standard run). ``verify=True``
    (implied by ``key``) first runs :func:`verify_run`: use it whenever saved results are
    compared. What it could not re-derive is kept in ``frame.attrs["claims"]``, and
    ``frame.attrs["verified"]`` is True.

    Args:
        path: a run directory or its ``episodes.jsonl``.
        verify: replay, re-run and check the run before returning it.
        key: a key file the run must be signed with (``srelib eval --sign``).

    Returns:
        A DataFrame of :data:`srelib.results.COLUMNS`.

    Raises:
        ValueError: when verifying, naming each missing, extra, changed or mislabelled
            episode, a plan no ``evaluate`` call makes, or a signature that does not hold.
    """
    episodes = load_episodes(path)
    run = run_directory(path)
    try:
        manifest = load_config(run)
    except (ValueError, OSError):  # episodes without a manifest (verify says so)
        manifest = {}
    attrs: dict[str, Any] = {"nonstandard": nonstandard_settings(manifest), "verified": False}
    if verify or key is not None:
        check = verify_run(run, episodes, key=key)
        if not check.ok:
            raise ValueError(f"{len(check.problems)} problem(s) with the {len(episodes)} episodes "
                             f"in {path}: they do not replay to what is stored, planned or "
                             f"signed: {_shown(check.problems)}")
        attrs.update(claims=list(check.claims), verified=True)
    frame = frame_from_episodes(episodes)
    frame.attrs.update(attrs)
    return frame
