"""Loading a run as the tidy frame every analysis takes, verified on request: replayed through
the seeded environment (:func:`srelib.results.verify.verify_run`), its scripted policies
re-run from srelib's registry (:mod:`srelib.runners.rerun`), its signature checked."""

from __future__ import annotations

import os
from typing import Any

from srelib.results.settings import nonstandard_settings
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
    return replay_run(run, episodes, key=key, rerun=rerun_findings)


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
