"""Re-running a stored episode's policy: a replay shows the records are what the environment
makes of those actions, a re-run shows which policy chose them.

A scripted policy is deterministic given the episode's seed, so :func:`srelib.evaluate` notes,
for each policy built from srelib's registry (:data:`srelib.POLICY_CLASSES`), its registry name
under ``config.registered`` in ``run.json``. :func:`rerun_findings` builds that policy afresh
from srelib's registry (never from anything else the run says), plays the episode again and
requires the same records and the same ``oracle`` flag: episodes relabelled from one policy to
another, or two policies' labels swapped, fail; so does a label that is itself a registry name
registered as another (two labels swapped with ``config.registered`` swapped to match: a
scripted label must be the policy of that name). An episode of any other policy (an LLM, a
sampled or a user's own policy) can only be replayed, so which policy chose its actions is
reported as a claim; it still fails if it plays exactly as one of srelib's oracle policies
(those handed the answer) while it says it was not handed the answer.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Mapping

import srelib.policies as policies
from srelib.policies.oracle import needs_answer
from srelib.policies.registry import POLICY_CLASSES, build_policy, scripted_policy
from srelib.results.grid import episode_name
from srelib.results.settings import section
from srelib.results.store import Episode
from srelib.runners.play import run_episode


def scripted_name(spec: Any) -> str | None:
    """The registry name of a policy spec that srelib can rebuild exactly, or None.

    Args:
        spec: what :func:`srelib.evaluate` was given for a policy: a factory or an instance.

    Returns:
        The name for ``scripted_policy(name)`` or a registered class itself (built with no
        arguments, as the registry builds it); None for anything else (instances, whose
        settings may differ from the defaults, lambdas, other factories, LLM policies).
    """
    if isinstance(spec, functools.partial) and spec.func is build_policy and not spec.keywords:
        classes = tuple(spec.args)
    elif isinstance(spec, type) and getattr(policies, spec.__name__, None) is spec:
        classes = (spec.__name__,)
    else:
        return None
    return next((name for name, names in POLICY_CLASSES.items() if names == classes), None)


@functools.lru_cache(maxsize=1)
def oracle_names() -> tuple[str, ...]:
    """The registered scripted policies that are handed the answer."""
    return tuple(name for name in POLICY_CLASSES if needs_answer(scripted_policy(name)()))


def _normal(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def _replay_of(name: str, episode: Episode, max_steps: int | None) -> Episode:
    from srelib.env.core import IncidentEnv

    return run_episode(IncidentEnv(), scripted_policy(name)(), episode.task, episode.pool,
                       episode.mode, episode.seed, max_steps=max_steps or None,
                       policy_name=episode.policy)


def _first_difference(ours: list, theirs: list) -> int | None:
    ours, theirs = _normal(ours), _normal(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return i
    return None if len(ours) == len(theirs) else min(len(ours), len(theirs))


def rerun_findings(episode: Episode, manifest: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``(problems, claims)`` about which policy played ``episode``, from playing it again.

    Args:
        episode: a stored episode that replays (:func:`srelib.verify_episode`).
        manifest: its run's ``run.json``.

    Returns:
        Problems: a registered policy whose re-run differs (the first differing record named),
        an oracle flag that differs from the registered policy's, an unregistered episode that
        plays exactly as an oracle policy. Claims: an unregistered policy's choice of actions.
    """
    config = section(manifest, "config")
    registered = section(config, "registered")
    cap, label, where = config.get("max_steps"), episode.policy, episode_name(episode.key)
    name = registered.get(label)
    if name is None:
        return _unregistered(episode, cap, where)
    if label in POLICY_CLASSES and name != label:
        return [f"{where}: labelled {label!r}, srelib's scripted policy of that name, but the run "
                f"registers it as {name!r}: a scripted label must be the policy it names"], []
    if name not in POLICY_CLASSES:
        return [f"{where}: the run says {label!r} is srelib's scripted policy {name!r}, which "
                f"this srelib does not register ({', '.join(POLICY_CLASSES)})"], []
    again = _replay_of(name, episode, cap)
    at = _first_difference(again.steps, episode.steps)
    if at is not None:
        return [f"{where}: srelib's {name!r} re-run from its registry plays otherwise from record "
                f"{at} on: the episode was not played by {label!r}"], []
    if bool(again.oracle) != bool(episode.oracle):
        return [f"{where}: says oracle={episode.oracle}; srelib's {name!r} is "
                f"{'' if again.oracle else 'not '}handed the answer"], []
    return [], []


def _unregistered(episode: Episode, cap: Any, where: str) -> tuple[list[str], list[str]]:
    """An episode no registered policy is named for: an oracle look-alike, else a claim."""
    if not episode.oracle:
        for oracle in oracle_names():
            if _first_difference(_replay_of(oracle, episode, cap).steps, episode.steps) is None:
                return [f"{where}: plays exactly as srelib's oracle policy {oracle!r}, which is "
                        "handed the answer, yet says it was not"], []
    named = f" (named like srelib's scripted {episode.policy!r}, but the run does not say it " \
        "was built from the registry)" if episode.policy in POLICY_CLASSES else ""
    return [], [f"{where}: replayed, not re-run{named}: that {episode.policy!r} chose its "
                f"actions, oracle={episode.oracle}, is the run's claim"]
