"""Which calls of a session the server runs on its event loop, and which on a worker thread.

A reset or a step runs on the event loop, as cheap as in process (no thread hand-off), unless it
may take long enough to hold up every other session: build a task's scenario or repository
(tens of milliseconds the first time, where a step takes well under one), wait on something
other than this process's CPU (a time-limited search), read a text action, or run a patch's
hidden tests in the sandbox. Those go to a worker thread.

The environment knows nothing of this. It answers, without building anything, what is already
held in memory (:func:`srelib.env.tasks.lookup.in_memory`, ``load_repo.peek``) and whether a patch's
grade is already known (:func:`srelib.env.grading.pipeline.grade_memoised`); this module decides from
those answers and from the tasks this process has already reset (:func:`record_reset`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from srelib.extras import require

require("pydantic", "srelib.serve.scheduling")
from pydantic import ValidationError

from srelib.env.actions import ActionType
from srelib.env.core import IncidentEnv
from srelib.env.tasks.lookup import in_memory, load_repo
from srelib.env.tasks.spec import EpisodeSpec
from srelib.serve.wire import ResetOptions, SreAction

__all__ = ["MEMO_CHECK_CHARS", "SLOW_ACTIONS", "Call", "Reset", "Step", "on_thread",
           "record_reset"]

#: Actions that may wait on something other than this process's CPU (a time-limited search):
#: always on a worker thread.
SLOW_ACTIONS = frozenset({ActionType.SEARCH_CODE.value})
#: A longer diff goes to a worker thread without asking the grade memo: asking normalises it
#: (up to about 2 ms on the loop for a diff of this many characters in many files).
MEMO_CHECK_CHARS = 8_000
#: ``(task, mode)`` of every reset of a named task this process has served: the first reset of
#: a task in a mode builds what the process-wide memos then hold (its scenario, in p2_only its
#: repository, the episode surface's keys), so only a later one may run on the loop. Only a
#: reset that succeeded is kept: at most every task's and suite's name and id in each mode.
_STARTED: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Reset:
    """A reset call: its options as the client sent them (``task``, ``pool``, ``mode``,
    ``seed``, ``episode_id``; anything else is refused by the reset itself)."""

    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """A step call: its typed action."""

    action: SreAction


#: One call of a session, as the server schedules it.
Call = Reset | Step


def record_reset(task: Any, mode: str) -> None:
    """Note that a reset of ``task`` in ``mode`` has run in this process.

    Args:
        task: the ``task`` option the reset was given (a name, an id, a suite or None; only a
            string is kept, and :func:`on_thread` asks the memos whether it is a task).
        mode: the mode the reset played (its info's ``mode``).
    """
    if isinstance(task, str):
        _STARTED.add((task, mode))


def on_thread(call: Call, env: IncidentEnv | None) -> bool:
    """Does ``call`` go to a worker thread rather than run on the event loop?

    Args:
        call: the session's call, a :class:`Reset` or a :class:`Step`.
        env: the session's environment (None once the session is closed: the call then fails
            at once, on the loop).

    Returns:
        True for a reset that may build its task first (a draw from a suite or a pool, whose
        task the seed picks; a named task not yet reset in its mode, or whose scenario or
        repository has left memory), a step of :data:`SLOW_ACTIONS`, text, a transition to
        phase 2 that loads the repository and a patch whose grade is not known; False for
        anything else, a call the environment refuses at once included.
    """
    if isinstance(call, Reset):
        return _reset_builds(call.options)
    return _step_slow(call.action, env)


def _reset_builds(options: dict) -> bool:
    try:
        body = ResetOptions.model_validate(options)
    except ValidationError:
        return False  # refused at once, on the loop
    try:
        mode = EpisodeSpec.resolve(body.task, body.pool, body.mode).mode
    except ValueError:
        return True  # refused by the reset, on a worker thread
    return (body.task is None or (body.task, mode) not in _STARTED
            or not in_memory(body.task, with_repo=mode == "p2_only"))


def _step_slow(action: SreAction, env: IncidentEnv | None) -> bool:
    if action.text is not None or action.action_type in SLOW_ACTIONS:
        return True
    kind = action.action_type
    if kind not in (ActionType.TRANSITION_TO_PHASE2.value, ActionType.PROPOSE_PATCH.value):
        return False
    scenario = env.scenario if env is not None else None
    if kind == ActionType.PROPOSE_PATCH.value:
        diff = (action.parameters or {}).get("diff")
        if not isinstance(diff, str) or len(diff) > MEMO_CHECK_CHARS:
            return True
    if scenario is None:
        return False
    state = env.state  # about 7 us: asked at most for one transition and one patch an episode
    if state.done or state.phase != (1 if kind == ActionType.TRANSITION_TO_PHASE2.value else 2):
        return False  # an invalid action: nothing loaded, nothing graded
    if kind == ActionType.TRANSITION_TO_PHASE2.value:
        return load_repo.peek(scenario.repo) is None
    from srelib.env.grading.pipeline import grade_memoised  # the grading stack, on the first patch

    return not grade_memoised(scenario.repo, scenario.name, diff)
