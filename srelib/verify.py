"""Replaying saved episodes: a stored trajectory is checked, never trusted as written.

This is the one replay of stored episodes: the trajectory viewer, the static HTML page and the
training-data export take the observations it recovers. :func:`verify_episode` resets a fresh environment with the episode's task, pool, mode and seed,
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
    ``first_observation`` is what the agent saw after reset, and ``observations`` holds, per
    stored record, the observation the environment returned for it (the pool-B handoff record
    gets the reset observation; records from the first mismatch on get None).
    """

    ok: bool
    records_match: bool
    score_match: bool
    problems: tuple[str, ...]
    replayed_score: dict | None
    first_observation: dict | None = None
    observations: tuple = ()

    def __bool__(self) -> bool:
        return self.ok


def _normal(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def _differences(stored: dict, replayed: dict) -> list[str]:
    ignored = _INVALID_IGNORED if stored.get("valid") is False and not replayed.get("valid") else ()
    keys = sorted((set(stored) | set(replayed)) - set(ignored))
    return [k for k in keys if _normal(stored.get(k)) != _normal(replayed.get(k))]


def _as_seen(obs: dict, record: dict) -> dict:
    """The observation the agent saw for ``record``: an invalid action is replayed as a stand-in
    (see the module doc), so its error text is put back from the record."""
    if record.get("valid") is not False or not isinstance(record.get("error"), str):
        return obs
    error = record["error"]
    return {**obs, "action_result": {**obs["action_result"], "error": error},
            "action_message": f"Invalid action: {error}"}


def verify_episode(episode: Any) -> Verification:
    """Replay ``episode`` (an :class:`srelib.Episode` or its dict) through the seeded
    environment and report whether its records and score match (see the module doc)."""
    from srelib.env.core import IncidentEnv
    from srelib.env.grading import score_trajectory
    from srelib.episode import RUNNER_ENDINGS, EpisodeSpec, advance, episode_steps
    from srelib.results import Episode

    if isinstance(episode, dict):
        episode = Episode.from_dict(episode)
    if not isinstance(episode, Episode):
        raise ValueError(f"verify_episode takes an Episode or its dict, got {type(episode).__name__}")
    env = IncidentEnv()
    stored = list(episode.steps)
    try:
        steps = episode_steps(env, EpisodeSpec.resolve(episode.task, episode.pool, episode.mode,
                                                       episode.seed))
        run = advance(steps, first=True)
    except (ValueError, RuntimeError) as exc:
        return Verification(False, False, False, (f"cannot replay: {exc}",), None,
                            observations=(None,) * len(stored))
    if run.error is not None:
        return Verification(False, False, False, ("cannot replay: the environment failed to "
                                                  "reset",), None, observations=(None,) * len(stored))
    first = run.obs
    observations: list[dict | None] = [first] * min(len(env.trajectory), len(stored))
    problems: list[str] = []
    for i, record in enumerate(stored):
        if i >= len(env.trajectory):
            if run.done:
                problems.append(f"record {i} comes after the episode ended")
                break
            action = record.get("action") if isinstance(record, dict) else None
            if isinstance(record, dict) and record.get("valid") is False:
                action = _INVALID_STEP
            run = advance(steps, action)
        if not isinstance(record, dict):
            problems.append(f"record {i} is not a dict")
            break
        fields = _differences(record, env.trajectory[i])
        if fields:
            problems.append(f"record {i} (step {record.get('step')}) differs from the replay in "
                            f"{', '.join(fields)}")
            break
        if len(observations) <= i:
            observations.append(_as_seen(run.obs, record))
    observations += [None] * (len(stored) - len(observations))
    if not problems and len(env.trajectory) > len(stored):
        problems.append(f"the replay has {len(env.trajectory) - len(stored)} record(s) the "
                        "episode lacks")
    records_match = not problems
    done = run.terminated or run.truncated
    if records_match and episode.ended_by not in RUNNER_ENDINGS and \
            bool(episode.terminated or episode.truncated) != done:
        problems.append(f"the episode says terminated={episode.terminated}, "
                        f"truncated={episode.truncated}; the replay {'ended' if done else 'did not end'}")
    replayed = score_trajectory(episode.task, episode.mode, env.trajectory)
    score_match = episode.score is not None and _normal(episode.score) == _normal(replayed)
    if not score_match:
        stored_final = None if episode.score is None else episode.score.get("final")
        problems.append(f"stored score {stored_final} differs from the replayed {replayed['final']}")
    return Verification(not problems, records_match, score_match, tuple(problems), replayed,
                        first, tuple(observations))
