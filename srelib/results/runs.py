"""Loading a run as the tidy frame every analysis takes, verified by replay on request."""

from __future__ import annotations

import os

from srelib.results.store import frame_from_episodes, load_episodes, run_directory
from srelib.results.verify import verify_run


def load_run(path: str | os.PathLike, verify: bool = False):
    """The episodes of a run as a tidy DataFrame, one row per episode.

    Args:
        path: a run directory or its ``episodes.jsonl``.
        verify: first check the run against its manifest's planned grid and replay every
            episode through the seeded environment (:func:`srelib.results.verify.verify_run`):
            use it whenever saved results are compared.

    Returns:
        A pandas DataFrame with the columns of ``srelib.results.COLUMNS``.

    Raises:
        ValueError: with ``verify``, naming each missing, extra or changed episode.
        MissingExtra: pandas is not installed (the ``demo`` extra).
    """
    episodes = load_episodes(path)
    if verify:
        problems = verify_run(run_directory(path), episodes)
        if problems:
            shown = "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else "")
            raise ValueError(f"{len(problems)} of {len(episodes)} episodes in {path} do not replay "
                             f"to what is stored or planned: {shown}")
    return frame_from_episodes(episodes)
