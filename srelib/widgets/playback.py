"""Playback of stored episodes: what the agent saw (by a deterministic replay), and an episode
as one static, self-contained HTML page."""

from __future__ import annotations

from typing import Any

from srelib.widgets.episode_panes import episode_html


def replay(episode: dict) -> tuple[dict | None, list[dict | None], str | None]:
    """What a stored episode's agent saw, from :func:`srelib.verify_episode`'s replay:
    ``(reset_observation, observations, note)``, one observation per record, None from the
    first record that does not replay (``note`` then says where)."""
    from srelib.results.verify import verify_episode

    check = verify_episode(episode)
    note = None if check.records_match else (
        f"replay diverged: {check.problems[0]}; later steps show the recorded trajectory only")
    return check.first_observation, list(check.observations), note


def to_html(episode: Any, index: int = 0, replay_results: bool = True) -> str:
    """A static, self-contained HTML page of an episode (inline CSS and SVG, no script).

    Accepts what :class:`TrajectoryViewer` accepts. With ``replay_results`` each step also
    shows its rendered result (alerts, logs, metrics, files, diffs), recovered by a
    deterministic replay. The page is byte-identical for a fixed seed.
    """
    from srelib.results.store import load_episode

    data = load_episode(episode, index)
    if not replay_results:
        return episode_html(data)
    first, observations, note = replay(data)
    return episode_html(data, observations, first, note)
