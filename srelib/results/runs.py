"""Loading a run as the tidy frame every analysis takes, verified by replay on request."""

from __future__ import annotations

import os

from srelib.results.store import frame_from_episodes, load_episodes, run_directory
from srelib.results.verify import verify_run


def load_run(path: str | os.PathLike, verify: bool = False):
    """The episodes of a run directory (or of its ``episodes.jsonl``) as a tidy DataFrame,
    one row per episode.

    ``verify=True`` first checks the run against its manifest's planned grid and replays every
    episode through the seeded environment (:func:`srelib.results.verify.verify_run`); it raises
    ``ValueError`` naming each missing, extra or changed episode: use it whenever saved results
    are compared.
    """
    episodes = load_episodes(path)
    if verify:
        problems = verify_run(run_directory(path), episodes)
        if problems:
            shown = "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else "")
            raise ValueError(f"{len(problems)} of {len(episodes)} episodes in {path} do not replay "
                             f"to what is stored or planned: {shown}")
    return frame_from_episodes(episodes)
