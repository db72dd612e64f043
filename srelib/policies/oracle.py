"""The answer channel: how a policy that is told the answer learns it.

A policy is handed an opaque task id (:mod:`srelib.env.tasks.ids`), which says nothing about the
task. A policy that needs the answer (the reference, the oracle-handoff baseline, the validity
gate's shortcut scripts) says so with ``needs_answer = True`` and offers
``receive_answer(task_id, scenario)``. Runners call :func:`hand_answer` whenever they reset a
policy (:func:`srelib.policies.call_reset`), and a run marks every episode of such a policy
``oracle``. :class:`AnswerKey` is the mixin that keeps what it was handed.
"""

from __future__ import annotations

from typing import Any


def needs_answer(policy: Any) -> bool:
    """Does ``policy`` (an instance or class) declare that it is handed the answer?"""
    return getattr(policy, "needs_answer", False) is True


def hand_answer(policy: Any, task: str | None, seed: int | None = None) -> None:
    """Hand ``task``'s scenario to ``policy`` if it declares that it needs the answer: with
    ``seed``, as that episode shows it (its bad commit's sha is the one the episode's git log
    shows: :class:`srelib.env.tasks.surface.EpisodeSurface`)."""
    receive = getattr(policy, "receive_answer", None)
    if task is None or not needs_answer(policy) or not callable(receive):
        return
    from srelib.env.tasks.lookup import get_scenario

    scenario = get_scenario(task)
    if seed is not None:
        from srelib.env.tasks.surface import EpisodeSurface, suite_key

        scenario = EpisodeSurface(suite_key(), seed, scenario.name).scenario(scenario)
    receive(task, scenario)


class AnswerKey:
    """Mixin for oracle policies: ``needs_answer``, and the scenarios handed to it by task id."""

    needs_answer = True

    def receive_answer(self, task: str, scenario: Any) -> None:
        self.__dict__.setdefault("_answers", {})[task] = scenario

    def answer(self, task: str) -> Any:
        """The scenario handed over for ``task``; RuntimeError if none was."""
        try:
            return self.__dict__["_answers"][task]
        except KeyError:
            raise RuntimeError(
                f"{type(self).__name__} needs the answer for task {task!r} and was not handed "
                "it: run it with srelib's runners, or call policy.receive_answer(task, "
                "srelib.get_scenario(task)) first") from None

    def answer_name(self, task: str) -> str:
        """The internal name of the task handed over as ``task``."""
        return self.answer(task).name
