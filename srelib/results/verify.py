"""Replaying saved episodes: a stored trajectory is checked, never trusted as written.

This is the one replay of stored episodes: the trajectory viewer, the static HTML page and the
training-data export take the observations it recovers. :func:`verify_episode` resets a fresh
environment with the episode's task, pool, mode and seed, steps it through the recorded actions
and compares every record the environment writes with the stored one, then re-grades the
replayed trajectory and compares the score. An edited, appended or re-scored record shows up
as a mismatch. :func:`verify_run` runs it over a whole run, checks the run's episodes against
the grid its manifest planned and that grid against what ``evaluate`` makes
(:mod:`srelib.results.grid`), names the non-standard settings it was scored under
(:mod:`srelib.results.settings`), checks its signature (:mod:`srelib.results.signing`) and
names, with their values, the fields no replay re-derives (:mod:`srelib.results.stated`). A
replay shows that the records and score are what the environment produces for those actions;
it cannot show which policy chose them: ``srelib.load_run(path, verify=True)`` passes
:func:`verify_run` a ``rerun`` that plays registered scripted policies again
(:mod:`srelib.runners.rerun`), and reports the other policies' choices as claims
(docs/verification.md).

Every field of an episode is either checked or listed in ``results.UNVERIFIABLE`` (what the
policy cost, the text of its failure, whether it was handed the answer). Checked: the task,
pool, mode and seed (the replay's inputs, and the plan's), every record, the score, how the
episode ended (``ended_by``, ``terminated``, ``truncated``: the replay's own ending, or a
runner's ending the replay agrees with: the step cap reached, or a failure with its traceback;
an episode with no ending at all is one stopped early, which a run never stores),
the parse failures (counted from the records) and ``r_cross`` (recomputed from the run's
``null_repair``).

A record stored as invalid is replayed with its stored action, which must be invalid again.
Its error text is compared when the record is a parse error (by its action or its error);
otherwise the stored action is a bounded JSON copy of what the policy sent, which may fail in
another way than the original object did. A parse error rewritten into an action therefore
shows up: the rewritten action replays as valid, or its error is still a parse error's. One
rewritten into another invalid action with that action's own error replays exactly as such an
episode would; the parse-failure count is then what the records say.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from srelib.env.actions import PARSE_ERROR
from srelib.env.types import Observation, ScoreBreakdown

_PARSE_MESSAGE = "Your reply could not be parsed as an action"


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
    replayed_score: ScoreBreakdown | None
    first_observation: Observation | None = None
    observations: tuple[Observation | None, ...] = ()

    def __bool__(self) -> bool:
        return self.ok


def _normal(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def _parse_error(record: dict) -> bool:
    """Does the record say the policy's reply could not be parsed (by its action or error)?"""
    action, error = record.get("action"), record.get("error")
    return (isinstance(action, dict) and action.get("action_type") == PARSE_ERROR) or \
        (isinstance(error, str) and error.startswith(_PARSE_MESSAGE))


def _differences(stored: dict, replayed: Mapping[str, Any]) -> list[str]:
    keys = set(stored) | set(replayed)
    if stored.get("valid") is False and replayed.get("valid") is False and \
            not _parse_error(stored):
        keys.discard("error")  # the stored copy of the policy's object may fail another way
    return [k for k in sorted(keys) if _normal(stored.get(k)) != _normal(replayed.get(k))]


def _as_seen(obs: Observation, record: dict) -> Observation:
    """The observation the agent saw for ``record``: an invalid action is replayed as a stand-in
    (see the module doc), so its error text is put back from the record."""
    if record.get("valid") is not False or not isinstance(record.get("error"), str):
        return obs
    error = record["error"]
    return {**obs, "action_result": {**obs.get("action_result", {}), "error": error},
            "action_message": f"Invalid action: {error}"}


def verify_episode(episode: Any, *, max_steps: int | None = None,
                   null_repair: Mapping[str, float] | None = None) -> Verification:
    """Replay ``episode`` (an :class:`srelib.Episode` or its dict) through the seeded
    environment and report whether its records, ending, counts and score match (see the module
    doc). ``max_steps`` and ``null_repair`` are the run's (``run.json``): an episode cut by the
    step cap must have taken exactly ``max_steps`` actions (0: the run had no cap; None: not
    known), and ``r_cross`` must follow from ``null_repair`` (``{}``: the run had none, so
    ``r_cross`` must be None; None: not known, not checked).

    Args:
        episode: an :class:`Episode` or its dict.
        max_steps: the run's step cap (0: no cap; None: not known).
        null_repair: the run's null-handoff repairs (``{}``: none; None: not known).

    Returns:
        A :class:`Verification`: whether it holds, its problems, and the observations the
        replay recovered.

    Raises:
        ValueError: ``episode`` is neither an Episode nor a dict.
    """
    from srelib.env.core import IncidentEnv
    from srelib.env.grading.score import score_trajectory
    from srelib.episode import RUNNER_ENDINGS, EpisodeSpec, advance, episode_steps
    from srelib.results.store import Episode

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
    observations: list[Observation | None] = [first] * min(len(env.trajectory), len(stored))
    problems: list[str] = []
    for i, record in enumerate(stored):
        if i >= len(env.trajectory):
            if run.done:
                problems.append(f"record {i} comes after the episode ended")
                break
            run = advance(steps, record.get("action") if isinstance(record, dict) else None)
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
    if records_match:
        problems += _ending_problems(episode, run, len(env.trajectory), max_steps)
    replayed = score_trajectory(episode.task, episode.mode, env.trajectory)
    score_match = episode.score is not None and _normal(episode.score) == _normal(replayed)
    if not score_match:
        stored_final = None if episode.score is None else episode.score.get("final")
        problems.append(f"stored score {stored_final} differs from the replayed {replayed['final']}")
    problems += _count_problems(episode, replayed, null_repair)
    return Verification(not problems, records_match, score_match, tuple(problems), replayed,
                        first, tuple(observations))


def _ending_problems(episode: Any, run: Any, records: int, max_steps: int | None) -> list[str]:
    """How the episode says it ended, against the replay (``records``: the replay's count)."""
    from srelib.episode import RUNNER_ENDINGS

    said = (episode.ended_by, bool(episode.terminated), bool(episode.truncated))
    if run.terminated or run.truncated:
        ended = (run.ended_by, bool(run.terminated), bool(run.truncated))
        return [] if said == ended else [f"the episode says it ended as {said}; the replay "
                                         f"ended as {ended}"]
    if said == (None, False, False):
        return []  # an episode stopped before its end (verify_run refuses those in a run)
    if episode.ended_by not in RUNNER_ENDINGS:
        return [f"the episode says it ended as {said}; the replay did not end"]
    if episode.ended_by == "max_steps":
        taken = records - (episode.mode == "p2_only")  # pool B's handoff record is no action
        if max_steps == 0:
            return ["the episode says a step cap ended it; the run had no step cap"]
        if said[1:] != (False, True) or (max_steps is not None and taken != max_steps):
            return [f"the episode says the step cap ({max_steps}) ended it after {taken} "
                    f"actions, as {said}"]
        return []
    if said[1:] != (False, False) or not episode.error:
        return [f"the episode says it ended as {said} with no traceback to show for it"]
    return []


def _count_problems(episode: Any, replayed: Mapping[str, Any], null_repair: Mapping | None) -> list[str]:
    """The parse failures and ``r_cross`` the episode states, against its records and score."""
    from srelib.env.grading.score import r_cross
    from srelib.env.tasks.ids import by_task
    from srelib.results.store import count_parse_failures

    problems = []
    counted = count_parse_failures([r for r in episode.steps if isinstance(r, dict)])
    if episode.parse_failures != counted:
        problems.append(f"the episode says {episode.parse_failures} parse failures; its records "
                        f"hold {counted}")
    if null_repair is None:  # not known: r_cross is not checked
        return problems
    null = by_task(null_repair, episode.task)
    repair = replayed.get("repair")
    expected = None if null is None or repair is None else float(r_cross(repair, null))
    if _normal(episode.r_cross) != _normal(expected):
        problems.append(f"the episode says r_cross={episode.r_cross}; the run's null_repair "
                        f"gives {expected}")
    return problems


#: ``rerun(episode, manifest) -> (problems, claims)``: what playing the episode's policy
#: again says about it (:func:`srelib.runners.rerun.rerun_findings`); None leaves every
#: episode's policy a claim.
Rerun = Callable[[Any, Mapping[str, Any]], "tuple[list[str], list[str]]"]


@dataclass(frozen=True)
class RunVerification:
    """The outcome of :func:`verify_run`.

    ``problems``: what the run is not (a missing, unplanned, edited or mislabelled episode, a
    plan no ``evaluate`` call makes, a bad signature), each naming the episode where there is
    one; the run verifies when there are none. ``claims``: what the run says that nothing here
    could re-derive (which policy chose a replayed episode's actions, a seed range someone
    chose, a signature not checked), each naming what it covers. ``nonstandard``: the settings
    other than srelib's that the run was scored under (:mod:`srelib.results.settings`).
    """

    problems: tuple[str, ...]
    claims: tuple[str, ...]
    nonstandard: tuple[str, ...]
    episodes: int

    @property
    def ok(self) -> bool:
        return not self.problems

    def __bool__(self) -> bool:
        return self.ok

    def summary(self) -> str:
        """The verdict in a few lines: problems and claims counted, non-standard settings named."""
        verdict = "verified" if self.ok else f"NOT verified: {len(self.problems)} problem(s)"
        lines = [f"{self.episodes} episodes: {verdict}; {len(self.claims)} claim(s) not re-derived"]
        lines += [f"scored under non-standard settings: {s}" for s in self.nonstandard]
        return "\n".join(lines)


def verify_run(path: Any, episodes: list | None = None, *, key: Any = None,
               rerun: Rerun | None = None, mapper: Callable = map) -> RunVerification:
    """Check the run directory ``path`` for everything that can be re-derived, and list the rest.

    Problems: planned episodes missing and stored ones not planned, a plan that does not match
    its digest or is no grid ``evaluate`` makes (:mod:`srelib.results.grid`), policies the
    config names that the plan lacks, each episode that does not replay (:func:`verify_episode`
    with the run's ``max_steps`` and ``null_repair``) or that ``rerun`` rejects, an episode the
    grader could not grade (it has no score to check), and a signature
    that does not hold under ``key``. Episodes are named by their key, the task by its public
    name.

    Args:
        path: a run directory.
        episodes: its episodes, if already loaded.
        key: a key file to check ``run.sig`` with (:mod:`srelib.results.signing`), or None.
        rerun: plays an episode's policy again; None reports every episode's policy as a claim.
        mapper: how the replays are mapped over the episodes, in order (``map``; an
            executor's ``map`` replays them on its workers).

    Returns:
        The :class:`RunVerification`.
    """
    return check_run(path, episodes, key=key, rerun=rerun, mapper=mapper)[0]


def check_run(path: Any, episodes: list | None = None, *, key: Any = None,
              rerun: Rerun | None = None, mapper: Callable = map
              ) -> tuple[RunVerification, dict[tuple, Verification]]:
    """:func:`verify_run`'s verdict, with each replayed episode's :class:`Verification`.

    Args:
        path: a run directory.
        episodes: its episodes, if already loaded.
        key: a key file to check ``run.sig`` with, or None.
        rerun: plays an episode's policy again; None reports every episode's policy as a claim.
        mapper: how the replays are mapped over the episodes, in order.

    Returns:
        ``(verdict, checks)``: the :class:`RunVerification`, and the replay of every planned,
        ended, graded episode by its key (its observations are what the episode's agent saw,
        for a viewer to show).
    """
    from srelib.results.grid import episode_name, grid_findings
    from srelib.results.settings import nonstandard_settings, section, version_claims
    from srelib.results.signing import signature_findings
    from srelib.results.stated import file_claims, sandbox_claims, stated_claims
    from srelib.results.store import RunManifest, load_config, load_episodes, plan_digest

    episodes = load_episodes(path) if episodes is None else episodes
    record: RunManifest
    try:
        record = load_config(path)
    except (ValueError, OSError):  # no run.json, or one that is not JSON
        record = {}
    problems, claims = signature_findings(path, key)
    claims += version_claims(record) + sandbox_claims(record) + file_claims(path)
    nonstandard = tuple(nonstandard_settings(record))
    plan = record.get("plan")
    if not isinstance(plan, dict) or not isinstance(plan.get("episodes"), list):
        problems.append(f"{path} has no planned grid in its manifest (run.json): only a run "
                        "written by srelib.evaluate can be checked for missing episodes")
        claims += stated_claims(record, episodes)
        return RunVerification(tuple(problems), tuple(claims), nonstandard, len(episodes)), {}
    planned = [tuple(k) for k in plan["episodes"]]
    if plan.get("digest") != plan_digest(planned):
        problems.append("the manifest's plan does not match its digest")
    grid_problems, grid_claims = grid_findings(planned)
    problems += grid_problems
    claims += grid_claims
    config = section(record, "config")
    unplanned = sorted(set(config.get("policies") or ()) - {k[0] for k in planned})
    if unplanned:
        problems.append(f"the config names policies {unplanned} that the plan never plays")
    stored = {e.key: e for e in episodes}
    problems += [f"{episode_name(k)}: planned but missing" for k in planned if k not in stored]
    wanted = set(planned)
    replayable = []
    for k, episode in stored.items():
        name = episode_name(k)
        if k not in wanted:
            problems.append(f"{name}: not in the plan")
        elif episode.ended_by is None:
            problems.append(f"{name}: stored before it ended")
        elif episode.grading_error is not None:  # no score to check: the run is not complete
            problems.append(f"{name}: not graded ({episode.grading_error.get('kind')}): run the "
                            "evaluation again with the same out= to grade it")
        else:
            replayable.append(episode)
    replay = functools.partial(verify_episode, max_steps=config.get("max_steps") or 0,
                               null_repair=config.get("null_repair") or {})
    checks = {e.key: check for e, check in zip(replayable, mapper(replay, replayable))}
    for episode in replayable:
        name, check = episode_name(episode.key), checks[episode.key]
        if not check.ok:
            problems.append(f"{name}: {check.problems[0]}")
            continue
        found, said = rerun(episode, record) if rerun is not None else ([], [
            f"{name}: replayed, not re-run: which policy chose its actions is the "
            "run's claim"])
        problems += found
        claims += said
    claims += stated_claims(record, episodes)
    verdict = RunVerification(tuple(problems), tuple(claims), nonstandard, len(episodes))
    return verdict, checks
