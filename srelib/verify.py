"""Replaying saved episodes: a stored trajectory is checked, never trusted as written.

:func:`verify_episode` resets a fresh environment with the episode's task, pool, mode and seed,
steps it through the recorded actions and compares every record the environment writes with
the stored one, then re-grades the replayed trajectory and compares the score. An edited,
appended or re-scored record shows up as a mismatch. ``srelib.load_run(path, verify=True)``
runs it over a whole run. A replay shows that the records and score are what the environment
produces for those actions; it cannot show which policy chose them. An invalid action changes
nothing but the step count, so a record stored as invalid is replayed as an invalid step and
its action and error text are not compared (the stored action is a bounded JSON copy of what
the policy sent, which may no longer be malformed in the same way).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from srelib.env.actions import PARSE_ERROR

#: Fields of a record not compared when it was an invalid action (see the module doc).
_INVALID_IGNORED = ("action", "error")
_INVALID_STEP = {"action_type": PARSE_ERROR, "parameters": {"reason": "replay of an invalid action"}}


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`verify_episode`.

    ``ok`` is true when every record and the score match the replay. ``problems`` says what
    did not, starting with the first mismatching record; ``replayed_score`` is the score of the
    replayed trajectory (None when the episode could not be replayed at all).
    """

    ok: bool
    records_match: bool
    score_match: bool
    problems: tuple[str, ...]
    replayed_score: dict | None

    def __bool__(self) -> bool:
        return self.ok


def _normal(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def _differences(stored: dict, replayed: dict) -> list[str]:
    ignored = _INVALID_IGNORED if stored.get("valid") is False and not replayed.get("valid") else ()
    keys = sorted((set(stored) | set(replayed)) - set(ignored))
    return [k for k in keys if _normal(stored.get(k)) != _normal(replayed.get(k))]


def verify_episode(episode) -> Verification:
    """Replay ``episode`` (an :class:`srelib.Episode` or its dict) through the seeded
    environment and report whether its records and score match (see the module doc)."""
    from srelib.env.core import IncidentEnv
    from srelib.env.grading import score_trajectory
    from srelib.results import Episode

    if isinstance(episode, dict):
        episode = Episode.from_dict(episode)
    if not isinstance(episode, Episode):
        raise ValueError(f"verify_episode takes an Episode or its dict, got {type(episode).__name__}")
    env = IncidentEnv()
    try:
        env.reset(task=episode.task, pool=episode.pool, mode=episode.mode, seed=episode.seed)
    except (ValueError, RuntimeError) as exc:
        return Verification(False, False, False, (f"cannot replay: {exc}",), None)
    stored = list(episode.steps)
    problems: list[str] = []
    done = False
    for i, record in enumerate(stored):
        if i >= len(env.trajectory):
            if done:
                problems.append(f"record {i} comes after the episode ended")
                break
            action = record.get("action") if isinstance(record, dict) else None
            if isinstance(record, dict) and record.get("valid") is False:
                action = _INVALID_STEP
            _, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
        if not isinstance(record, dict):
            problems.append(f"record {i} is not a dict")
            break
        fields = _differences(record, env.trajectory[i])
        if fields:
            problems.append(f"record {i} (step {record.get('step')}) differs from the replay in "
                            f"{', '.join(fields)}")
            break
    if not problems and len(env.trajectory) > len(stored):
        problems.append(f"the replay has {len(env.trajectory) - len(stored)} record(s) the "
                        "episode lacks")
    records_match = not problems
    ended_early = episode.ended_by in ("max_steps", "policy_error", "env_error")
    if records_match and not ended_early and bool(episode.terminated or episode.truncated) != done:
        problems.append(f"the episode says terminated={episode.terminated}, "
                        f"truncated={episode.truncated}; the replay {'ended' if done else 'did not end'}")
    replayed = score_trajectory(episode.task, episode.mode, env.trajectory)
    score_match = episode.score is not None and _normal(episode.score) == _normal(replayed)
    if not score_match:
        stored_final = None if episode.score is None else episode.score.get("final")
        problems.append(f"stored score {stored_final} differs from the replayed {replayed['final']}")
    return Verification(not problems, records_match, score_match, tuple(problems), replayed)
