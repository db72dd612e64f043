"""The Policy protocol, composition, resets and the helpers every policy shares.

A policy is any callable ``(observation, phase, task_name) -> action dict`` (the seed's
protocol). srelib's own policies also expose ``name`` and ``reset(seed=None, task_name=None)``;
those that serve many episodes at once offer ``act_batch(items)``, where each item is
``(observation, phase, task_name)`` or ``(observation, phase, task_name, lane)``: ``lane`` names
the episode (any hashable; without it an item's position in the batch is its lane).
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable, Hashable, Protocol, Sequence, runtime_checkable

from srelib.env.actions import ActionType
from srelib.env.types import Action, Observation
from srelib.policies.oracle import hand_answer, needs_answer


@runtime_checkable
class Policy(Protocol):
    """Anything that maps an observation to an action dict."""

    def __call__(self, observation: Observation, phase: int, task_name: str) -> Action:
        ...


@runtime_checkable
class BatchPolicy(Protocol):
    """A policy that serves many episodes per call: runners step ``act_batch`` policies in
    lockstep (:func:`srelib.runners.lockstep.run_lockstep`), one call per step for every running episode.
    ``reset_batch([(seed, task_name), ...])`` is optional."""

    def act_batch(self, items: Sequence[Sequence]) -> list[Action]:
        ...


def supports_batch(policy: Any) -> bool:
    """True when ``policy`` (an instance) offers ``act_batch``."""
    return callable(getattr(policy, "act_batch", None))


def make_action(action_type: Any, target_service: str | None = None, **parameters: Any) -> Action:
    """An action dict in the contract's shape.

    Args:
        action_type: The action's type, an ActionType or its name.
        target_service: The service it acts on, if any.
        **parameters: Its parameters.

    Returns:
        ``{"action_type", "target_service", "parameters"}``.
    """
    return {"action_type": getattr(action_type, "value", action_type),
            "target_service": target_service, "parameters": parameters}


def handoff_action(belief: Any) -> Action:
    """``transition_to_phase2`` handing over ``belief`` (a BeliefState or its dict)."""
    from dataclasses import asdict, is_dataclass

    from srelib.env.actions import ActionType

    return make_action(ActionType.TRANSITION_TO_PHASE2,
                       belief=asdict(belief) if is_dataclass(belief) else dict(belief))


def policy_name(policy: Any) -> str:
    return getattr(policy, "name", None) or type(policy).__name__


def call_reset(policy: Any, seed: int | None = None, task_name: str | None = None) -> None:
    """Reset ``policy`` for a new episode in the first way its ``reset`` accepts.

    ``reset(seed=, task_name=)``, then ``reset(seed=)``, ``reset(task_name)`` (the seed's chat
    policies) and ``reset()`` (the seed's scripted ones), chosen from the signature so that a
    TypeError raised inside ``reset`` is never mistaken for a refusal. A policy that declares
    ``needs_answer`` is then handed the task's scenario (:mod:`srelib.policies.oracle`).

    Args:
        policy: The policy.
        seed: The episode's seed.
        task_name: The episode's task.
    """
    _reset(policy, seed, task_name)
    hand_answer(policy, task_name, seed)


def _reset(policy: Any, seed: int | None, task_name: str | None) -> None:
    reset = getattr(policy, "reset", None)
    if not callable(reset):
        return
    function = getattr(reset, "__func__", reset)  # a method's signature: read once a class
    names = (_function_keywords(function) if isinstance(function, types.FunctionType)
             else _keywords(reset))
    reset(**{name: value for name, value in (("seed", seed), ("task_name", task_name))
             if name in names})


def _keywords(reset: Callable) -> frozenset[str]:
    """Which of ``seed`` and ``task_name`` ``reset`` is called with: both when it takes both
    or any keyword, else the one it names (none when its signature cannot be read)."""
    try:
        params = inspect.signature(reset).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return frozenset({"seed", "task_name"})
    return frozenset({"seed", "task_name"} & set(params))


_function_keywords = functools.lru_cache(maxsize=256)(_keywords)


def steps_taken(observation: dict) -> int:
    """The observation's step count (0 when missing)."""
    return int(observation.get("steps_taken") or 0)


class EpisodeWatcher:
    """Mixin for scripted policies: ``reset()`` when the step count goes back, i.e. a new
    episode began without the runner calling ``reset`` (the seed's runners don't always)."""

    _last_step = -1

    def _watch_episode(self, observation: dict) -> None:
        if self._began_anew(observation):
            self._on_new_episode()

    def _began_anew(self, observation: dict) -> bool:
        """True when ``observation`` starts another episode: its step count did not grow."""
        step = steps_taken(observation)
        new = step <= self._last_step
        self._last_step = step
        return new

    def _on_new_episode(self) -> None:
        self.reset()


class EvidencePhase1Policy(EpisodeWatcher):
    """Mixin for scripted phase-1 policies that read the answer to each step they asked for
    (``_absorb``) before choosing the next (``_next``); in phase 2 they declare no change."""

    _asked: tuple[str, str | None] | None = None

    def __call__(self, observation: dict, phase: int, task_name: str) -> Action:
        self._watch_episode(observation)
        if phase != 1:
            return make_action(ActionType.DECLARE_NO_CHANGE, reason="phase-1 policy: no code work")
        self._absorb(observation)
        action = self._next(observation)
        self._asked = (action["action_type"], action.get("target_service"))
        return action

    def _absorb(self, observation: dict) -> None:
        raise NotImplementedError

    def _next(self, observation: dict) -> Action:
        raise NotImplementedError


def split_item(item: Sequence, position: int) -> tuple[dict, int, str, Hashable]:
    """``(observation, phase, task_name[, lane])`` -> the four parts (lane defaults to position)."""
    if len(item) not in (3, 4):
        raise ValueError("act_batch items are (observation, phase, task_name) or "
                         f"(observation, phase, task_name, lane); got {len(item)} parts")
    observation, phase, task_name = item[:3]
    return observation, phase, task_name, item[3] if len(item) == 4 else position


class CompositePolicy:
    """``phase1`` acts in phase 1, ``phase2`` in phase 2; reset goes to both.

    ``act_batch`` (and ``reset_batch``) exist only when both parts offer them.

    Args:
        phase1: The policy that acts in phase 1.
        phase2: The policy that acts in phase 2.
        name: Its name (None: ``"<phase1>+<phase2>"``).
    """

    def __init__(self, phase1: Callable, phase2: Callable, name: str | None = None):
        self.phase1, self.phase2 = phase1, phase2
        self.name = name or f"{policy_name(phase1)}+{policy_name(phase2)}"
        if all(callable(getattr(p, "act_batch", None)) for p in (phase1, phase2)):
            self.act_batch = self._act_batch
        if all(callable(getattr(p, "reset_batch", None)) for p in (phase1, phase2)):
            self.reset_batch = self._reset_batch

    def __repr__(self) -> str:
        return f"CompositePolicy({self.phase1!r}, {self.phase2!r})"

    @property
    def needs_answer(self) -> bool:
        """True when a part is handed the answer (each part gets it when reset)."""
        return needs_answer(self.phase1) or needs_answer(self.phase2)

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        call_reset(self.phase1, seed, task_name)
        call_reset(self.phase2, seed, task_name)

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        return (self.phase1 if phase == 1 else self.phase2)(observation, phase, task_name)

    @property
    def usage(self) -> list[dict] | None:
        """The parts' call records merged in time order (present if a part records usage)."""
        records = [u for p in (self.phase1, self.phase2)
                   for u in (getattr(p, "usage", None) or [])]
        if not any(isinstance(getattr(p, "usage", None), list) for p in (self.phase1, self.phase2)):
            return None
        return sorted(records, key=lambda u: u.get("t", 0.0))

    def _act_batch(self, items: Sequence[Sequence]) -> list[dict]:
        actions: list[dict | None] = [None] * len(items)
        parts = [split_item(item, i) for i, item in enumerate(items)]
        for part, in_phase1 in ((self.phase1, True), (self.phase2, False)):
            picked = [i for i, (_, phase, _, _) in enumerate(parts) if (phase == 1) == in_phase1]
            if picked:
                usage = getattr(part, "usage", None)
                mark = len(usage) if isinstance(usage, list) else None
                for i, action in zip(picked, part.act_batch([parts[i] for i in picked])):
                    actions[i] = action
                _renumber_items(usage, mark, picked)
        return actions  # type: ignore[return-value]

    def _reset_batch(self, episodes: Sequence) -> None:
        self.phase1.reset_batch(episodes)
        self.phase2.reset_batch(episodes)


def compose(phase1: Any, phase2: Any) -> CompositePolicy:
    """A fresh :class:`CompositePolicy` of two policy specs (:mod:`srelib.policies.specs`: a
    factory is called, an instance copied): how registries and experiments join two policies."""
    from srelib.policies.specs import instantiate

    return CompositePolicy(instantiate(phase1, copy_instance=True),
                           instantiate(phase2, copy_instance=True))


def _renumber_items(usage, mark: int | None, picked: list[int]) -> None:
    """Map the ``item`` of a part's new call records from its sub-batch to the whole batch."""
    if mark is None:
        return
    for record in usage[mark:]:
        item = record.get("item") if isinstance(record, dict) else None
        if isinstance(item, int) and 0 <= item < len(picked):
            record["item"] = picked[item]
