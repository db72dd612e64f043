"""Playback of stored episodes: what the agent saw (by a deterministic replay), the panes of
one record as the trajectory viewer draws them, and an episode as one static, self-contained
HTML page."""

from __future__ import annotations

from typing import Any

from srelib.env.records import handoff
from srelib.widgets.episode_panes import episode_html, score, step_record, timeline
from srelib.widgets.markup import error_box
from srelib.widgets.observation_panes import counter, incident, reward_line, status_board
from srelib.widgets.result_panes import belief

#: The panes of :func:`record_panes`, in the order a page lays them out.
RECORD_PANES = ("timeline", "counter", "incident", "board", "rewards", "status", "action",
                "belief", "score")


def replay(episode: dict) -> tuple[dict | None, list[dict | None], str | None]:
    """What a stored episode's agent saw, from :func:`srelib.verify_episode`'s replay:
    ``(reset_observation, observations, note)``, one observation per record, None from the
    first record that does not replay (``note`` then says where)."""
    from srelib.results.verify import verify_episode

    check = verify_episode(episode)
    note = None if check.records_match else (
        f"replay diverged: {check.problems[0]}; later steps show the recorded trajectory only")
    return check.first_observation, list(check.observations), note


def record_panes(episode: dict, first_obs: dict | None, observations: list[dict | None],
                 note: str | None, index: int) -> dict[str, str]:
    """The HTML fragments the trajectory viewer shows at record ``index`` of ``episode``.

    The viewer's widgets and the run report's pages both draw these, so the two never differ.

    Args:
        episode: the stored episode as a dict (its ``steps``, ``score`` and ending).
        first_obs: the reset observation :func:`replay` recovered (None if it did not replay).
        observations: one replayed observation per record (None where the replay diverged).
        note: :func:`replay`'s note, shown where a record has no observation.
        index: the record, 0-based.

    Returns:
        One fragment per name of :data:`RECORD_PANES` ("" where the pane is empty).

    Raises:
        ValueError: ``index`` is outside the episode's records.
    """
    steps = list(episode.get("steps") or [])
    if not 0 <= index < len(steps):
        raise ValueError(f"index must be in 0..{len(steps) - 1}, got {index}")
    record, obs = steps[index], observations[index]
    last = index == len(steps) - 1
    seen = [o for o in (first_obs, *observations) if o]
    max_steps = seen[0].get("max_steps") if seen else "?"
    ended = last and bool(episode.get("terminated") or episode.get("truncated"))
    cumulative = sum(float(r.get("reward") or 0.0) for r in steps[:index + 1])
    return {"timeline": timeline(steps, current=index),
            "counter": counter(record.get("step"), max_steps, record.get("phase"), ended),
            "incident": incident(obs or first_obs or {}),
            "board": status_board(record.get("statuses")),
            "rewards": reward_line(record.get("phase"), record.get("reward"), cumulative, last),
            "status": error_box(note) if note and obs is None else "",
            "action": step_record(record, obs, board=False),  # the board pane has it
            "belief": belief(*handoff(steps[:index + 1])),
            "score": score(episode.get("score")) if last else ""}


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
