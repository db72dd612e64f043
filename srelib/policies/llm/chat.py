"""The machinery every chat policy shares: one conversation per episode (a lane), replies
parsed into actions, parse failures counted and ended by GIVE_UP, call records for the runner.
A provider (:mod:`srelib.policies.llm.providers`) subclasses :class:`ChatPolicyBase` and
implements ``_complete``."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any, Hashable, Sequence

from srelib.env.parse import give_up_action, parse_action, parse_error_action
from srelib.policies.base import split_item, steps_taken
from srelib.policies.llm.prompts import SYSTEM_PROMPT, Transcript


class _Lane:
    """One episode's conversation and its run of consecutive parse failures."""

    def __init__(self, transcript: Transcript, task_name: str):
        self.transcript, self.task_name = transcript, task_name
        self.consecutive_failures = 0
        self.last_step = -1


class ChatPolicyBase(ABC):
    """Turns observations into chat prompts and replies into actions, for many episodes.

    Subclasses implement ``_complete(conversations) -> list[str | BaseException]``: one reply
    (or the error that prevented it) per conversation. A reply that cannot be parsed becomes
    the PARSE_ERROR action, whose explanation the model reads next turn; after
    ``max_failures`` consecutive failures the policy sends GIVE_UP, ending the episode cleanly.
    ``parse_failures`` counts every failure since the last reset; ``usage`` has one record per
    model call (tokens, latency) for the runner.

    Args:
        max_history: How many past exchanges a prompt keeps.
        max_failures: Consecutive failed replies before the policy gives up.
        obs_chars: The budget, in characters, of one rendered observation.
        max_prompt_chars: The budget of a whole prompt; the oldest exchanges go first.
        system_prompt: The system turn.

    Raises:
        ValueError: ``max_failures`` is below 1.
    """

    name = "chat"
    #: Whether the conversation keeps actions as tool calls (see ``Transcript.tool_turns``);
    #: then a readable call that is not valid now goes to the environment, an invalid action,
    #: not a parse failure.
    tool_turns = False

    def __init__(self, *, max_history: int = 8, max_failures: int = 3,
                 obs_chars: int = 6000, max_prompt_chars: int = 32000,
                 system_prompt: str = SYSTEM_PROMPT):
        if max_failures < 1:
            raise ValueError(f"max_failures must be >= 1, got {max_failures}")
        self.max_history, self.max_failures = int(max_history), int(max_failures)
        self.obs_chars, self.max_prompt_chars = int(obs_chars), int(max_prompt_chars)
        self.system_prompt = system_prompt
        self.usage: list[dict] = []
        self.parse_failures = 0
        self.seed: int | None = None
        self._lanes: dict[Hashable, _Lane] = {}

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """Forget every episode's conversation; ``reset("task")`` (the seed's form) works too.

        Args:
            seed: The episode's seed.
            task_name: The episode's task.
        """
        if isinstance(seed, str):
            seed, task_name = None, seed
        self.seed = seed
        self.parse_failures = 0
        self._lanes.clear()

    def reset_batch(self, episodes: Sequence) -> None:
        """Start a lockstep group.

        Args:
            episodes: ``[(seed, task_name), ...]``, one per lane.
        """
        self.reset(episodes[0][0] if episodes else None)

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        return self.act_batch([(observation, phase, task_name, None)])[0]

    def conversation(self, lane: Hashable = None) -> list[dict]:
        """The messages the model would see now in ``lane``.

        Args:
            lane: The episode's lane (None: the single-episode lane).

        Returns:
            The chat messages, system turn first.
        """
        found = self._lanes.get(lane)
        return found.transcript.messages() if found else []

    def act_batch(self, items: Sequence[Sequence]) -> list[dict]:
        lanes, conversations = [], []
        for position, item in enumerate(items):
            observation, _, task_name, key = split_item(item, position)
            lane = self._lane(key, observation, task_name)
            lane.transcript.add_observation(observation)
            lanes.append((lane, observation))
            conversations.append(lane.transcript.messages())
        replies = self._complete(conversations)
        return [self._decide(lane, observation, reply)
                for (lane, observation), reply in zip(lanes, replies)]

    def _lane(self, key: Hashable, observation: dict, task_name: str) -> _Lane:
        # a lane may be asked twice at one step (a retry), so only a step count that went
        # back starts a new episode here
        step = steps_taken(observation)
        lane = self._lanes.get(key)
        if lane is None or lane.task_name != task_name or step < lane.last_step:
            lane = _Lane(Transcript(self.system_prompt, self.obs_chars, self.max_history,
                                    self.max_prompt_chars, self.tool_turns), task_name)
            self._lanes[key] = lane
        lane.last_step = step
        return lane

    def _decide(self, lane: _Lane, observation: dict, reply: str | BaseException) -> dict:
        """This lane's action from its reply; whatever the reply, other lanes are unaffected."""
        if not isinstance(reply, (str, BaseException)):
            reply = TypeError(f"the model returned {type(reply).__name__}, not text")
        if isinstance(reply, BaseException):
            reason = f"the model call failed: {self._describe_error(reply)}"
        else:
            lane.transcript.add_reply(reply)
            # in tool turns the environment judges whether a readable call is valid now, as
            # in the GRPO rollouts; otherwise the parser checks it against the valid actions
            valid = None if self.tool_turns else observation.get("valid_actions")
            result = parse_action(reply, valid)
            if result.action is not None:
                lane.consecutive_failures = 0
                return result.action
            reason = result.error or "unreadable reply"
        lane.consecutive_failures += 1
        self.parse_failures += 1
        if lane.consecutive_failures >= self.max_failures:
            return give_up_action(f"{lane.consecutive_failures} consecutive failures; last: {reason}")
        return parse_error_action(reason)

    def _describe_error(self, error: BaseException) -> str:
        return f"{type(error).__name__}: {error}"

    def _record(self, prompt_tokens: int | None, completion_tokens: int | None,
                latency_s: float, **extra: Any) -> None:
        total = (prompt_tokens or 0) + (completion_tokens or 0)
        self.usage.append({"t": time.monotonic(), "prompt_tokens": prompt_tokens,
                           "completion_tokens": completion_tokens, "total_tokens": total,
                           "latency_s": round(latency_s, 6), **extra})

    @abstractmethod
    def _complete(self, conversations: list[list[dict]]) -> list[str | BaseException]:
        """One reply per conversation, or the exception that prevented it."""
