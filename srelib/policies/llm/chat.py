"""The machinery every chat policy shares: one conversation per episode (a lane), replies
parsed into actions, parse failures counted and ended by GIVE_UP, failed model calls retried,
call records for the runner. A provider (:mod:`srelib.policies.llm.providers`) subclasses
:class:`ChatPolicyBase` and implements ``_complete``; its settings are a
:class:`~srelib.policies.llm.config.ChatConfig`."""

from __future__ import annotations

import email.utils
import logging
import math
import time
from abc import ABC, abstractmethod
from typing import Any, Hashable, Sequence

from srelib.env.parse import give_up_action, parse_action, parse_error_action
from srelib.policies.base import split_item, steps_taken
from srelib.policies.llm.config import ChatConfig, build_config, with_defaults
from srelib.policies.llm.prompts import SYSTEM_PROMPT, Transcript

log = logging.getLogger(__name__)


class _Lane:
    """One episode's conversation and its run of consecutive parse failures."""

    def __init__(self, transcript: Transcript, task_name: str):
        self.transcript, self.task_name = transcript, task_name
        self.consecutive_failures = 0
        self.last_step = -1


class ChatPolicyBase(ABC):
    """Turns observations into chat prompts and replies into actions, for many episodes.

    Subclasses implement ``_complete(conversations) -> list[str | BaseException]``: one reply
    (or the error that prevented it) per conversation, from one attempt. The base retries the
    conversations whose error retrying may fix (:meth:`_retryable`), each after
    ``backoff * 2**attempt`` seconds or what the error's ``Retry-After`` asks (up to
    ``max_retry_after``), at most ``max_retries`` times and never past ``deadline``; then the
    last error stands. A reply that cannot be parsed, or a call that still failed, becomes the
    PARSE_ERROR action, whose explanation the model reads next turn; after ``max_failures``
    consecutive failures the policy sends GIVE_UP, ending the episode cleanly.
    ``parse_failures`` counts every failure since the last reset; ``usage`` has one record per
    attempt (tokens, latency, ``attempts`` so far, ``item``: the conversation's index) for the
    runner.

    Args:
        config: The settings (a :class:`~srelib.policies.llm.config.ChatConfig`, or the
            provider's subclass of it), or the model (the first of :attr:`positional`).
        *args: Further settings by position, named by :attr:`positional`.
        **overrides: Settings by name, over ``config`` (old names: ``config.ALIASES``).

    Raises:
        TypeError: An unknown keyword (the message lists the valid ones).
        ValueError: A setting out of its range (``max_failures`` below 1, ...).
    """

    name = "chat"
    #: Whether the conversation keeps actions as tool calls (see ``Transcript.tool_turns``);
    #: then a readable call that is not valid now goes to the environment, an invalid action,
    #: not a parse failure.
    tool_turns = False
    #: The provider's config class.
    config_class: type[ChatConfig] = ChatConfig
    #: The config fields that positional arguments set, in order.
    positional: tuple[str, ...] = ("model",)
    #: What a setting the config leaves None becomes.
    defaults: dict[str, Any] = {"max_tokens": 600, "max_history": 8, "obs_chars": 6000,
                                "max_prompt_chars": 32000, "system_prompt": SYSTEM_PROMPT,
                                "tools": False}

    def __init__(self, config: ChatConfig | str | None = None, /, *args: Any, **overrides: Any):
        if config is not None and not isinstance(config, ChatConfig):
            config, args = None, (config, *args)
        config = build_config(self.config_class, config, args, overrides, self.positional,
                              type(self).__name__)
        config = with_defaults(config, {**self.defaults, **self._saved_settings(config)})
        self.config = config
        self.max_history, self.max_failures = int(config.max_history), int(config.max_failures)
        self.obs_chars, self.max_prompt_chars = int(config.obs_chars), int(config.max_prompt_chars)
        self.system_prompt = config.system_prompt
        self.max_retries, self.backoff = int(config.max_retries), float(config.backoff)
        self.max_retry_after = float(config.max_retry_after)
        self.deadline: float | None = config.deadline
        #: The ``time.monotonic()`` by which the call in progress must end (None outside one).
        self.call_deadline: float | None = None
        self.usage: list[dict] = []
        self.parse_failures = 0
        self.seed: int | None = None
        self._lanes: dict[Hashable, _Lane] = {}

    def _saved_settings(self, config: ChatConfig) -> dict[str, Any]:
        """Settings the model brings (a folder saved with them), below the given ones."""
        return {}

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
        replies = self._replies(conversations)
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

    def _replies(self, conversations: list[list[dict]]) -> list[str | BaseException]:
        """One reply per conversation, retried per the config (a provider may add fallbacks)."""
        return self._with_retries(conversations, self._deadline_from_now())

    def _deadline_from_now(self) -> float:
        return math.inf if self.deadline is None else time.monotonic() + self.deadline

    def _with_retries(self, conversations: Sequence[list[dict]], deadline: float,
                      items: Sequence[int] | None = None) -> list[str | BaseException]:
        """``_complete`` on each conversation, again on each whose error :meth:`_retry_wait`
        allows once its wait is over, all before ``deadline`` (``time.monotonic``). The lanes
        due together are asked together. ``items`` are the conversations' indices in the
        caller's batch (default: their positions); usage records carry them."""
        items = list(range(len(conversations))) if items is None else list(items)
        replies: list[str | BaseException] = [RuntimeError("not asked")] * len(conversations)
        attempts = [0] * len(conversations)
        due = {lane: time.monotonic() for lane in range(len(conversations))}
        while due:
            time.sleep(max(0.0, min(due.values()) - time.monotonic()))
            now = time.monotonic()
            lanes = sorted(lane for lane, at in due.items() if at <= now)
            for lane in lanes:
                del due[lane]
                attempts[lane] += 1
            got = self._attempt_lanes([conversations[i] for i in lanes],
                                      [(items[i], attempts[i]) for i in lanes], deadline)
            for lane, reply in zip(lanes, got):
                replies[lane] = reply
                if not isinstance(reply, BaseException):
                    continue
                wait = self._retry_wait(reply, attempts[lane] - 1)
                if wait is not None and time.monotonic() + wait < deadline:
                    log.warning("chat call failed (%s); retry %d of %d in %.2f s",
                                self._describe_error(reply), attempts[lane], self.max_retries,
                                wait)
                    due[lane] = time.monotonic() + wait
        return replies

    def _attempt_lanes(self, conversations: list[list[dict]], lanes: list[tuple[int, int]],
                       deadline: float) -> list[str | BaseException]:
        """One ``_complete`` call; the usage it records gets each lane's ``(item, attempts)``."""
        mark = len(self.usage)
        self.call_deadline = deadline
        try:
            replies = list(self._complete(conversations))
        finally:
            self.call_deadline = None
        if len(replies) != len(conversations):
            raise RuntimeError(f"{type(self).__name__}._complete returned {len(replies)} replies "
                               f"for {len(conversations)} conversations")
        for position, record in enumerate(self.usage[mark:]):
            at = record.get("item", position)
            if isinstance(at, int) and 0 <= at < len(lanes):
                record["item"], record["attempts"] = lanes[at]
        return replies

    def _retry_wait(self, error: BaseException, attempt: int) -> float | None:
        """Seconds to wait before retrying after ``error`` at ``attempt`` (0 for the first),
        or None: no retry."""
        if attempt >= self.max_retries or not self._retryable(error):
            return None
        wait = self.backoff * 2 ** attempt
        asked = retry_after(error)
        return wait if asked is None else max(wait, min(asked, self.max_retry_after))

    def _retryable(self, error: BaseException) -> bool:
        """Whether retrying may fix ``error``: here a timeout or a dropped connection; a
        provider adds its client's errors (rate limits, server errors)."""
        return isinstance(error, (TimeoutError, ConnectionError))

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


def retry_after(error: BaseException) -> float | None:
    """Seconds a ``Retry-After`` (or ``retry-after-ms``) header of the error's HTTP response asks.

    Args:
        error: An exception; HTTP clients (``openai``, ``httpx``, ``requests``) put the response
            on ``error.response``.

    Returns:
        The seconds (0 for a date in the past), or None when no such header is readable.
    """
    headers = getattr(getattr(error, "response", None), "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        if value.strip().replace(".", "", 1).isdigit():
            return float(value)
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return max(0.0, when.timestamp() - time.time())
