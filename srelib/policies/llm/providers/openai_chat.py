"""OpenAIChatPolicy: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
``transformers serve``) through the official ``openai`` client.

Each attempt has a time limit for connecting and reading the whole reply, and each call a
total deadline over all its attempts, so a server that trickles its reply or stalls cannot hold
a call past it. The base (:class:`~srelib.policies.llm.chat.ChatPolicyBase`) retries 429, 5xx,
timeouts and dropped connections with exponential backoff, waiting as long as a
``Retry-After`` header asks, up to a cap. Every attempt's tokens and latency land in ``usage``.
``act_batch`` runs up to ``max_concurrency`` calls at once on plain threads, so it works the
same inside Jupyter's running event loop, and a failed or malformed reply affects only its own
conversation. The API key never appears in reprs, actions or logs.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from srelib.extras import require
from srelib.env.support.json_copy import valid_text
from srelib.policies.llm.chat import ChatPolicyBase
from srelib.policies.llm.config import ChatConfig
from srelib.policies.llm.providers import provider
from srelib.redact import remember_secret, scrub_secrets
from srelib.policies.llm.prompts import fold_system

log = logging.getLogger(__name__)

_UNSET_KEY = "not-set"


class ReplyTimeout(TimeoutError):
    """An attempt got no complete reply in time (its own limit, or the call's deadline)."""


@dataclass(kw_only=True)
class OpenAIChatConfig(ChatConfig):
    """:class:`~srelib.policies.llm.config.ChatConfig` plus the endpoint's own settings.
    The ChatConfig fields come first; these follow.

    Args:
        base_url: The endpoint (default ``OPENAI_BASE_URL``, else OpenAI's).
        api_key: The key (default ``OPENAI_API_KEY``); never shown in the repr.
        timeout: Seconds one attempt may take, connecting and reading the whole reply.
        max_concurrency: Calls in flight at once in a batch.
        fold_system: Send the system prompt inside the first user turn (True), never (False),
            or learn it from the first refusal (None).

    Raises:
        ValueError: ``timeout`` not positive or ``max_concurrency`` below 1.
    """

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    max_concurrency: int = 8
    fold_system: bool | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.max_concurrency, bool) or not self.max_concurrency >= 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency!r}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout!r}")


@provider("openai")
class OpenAIChatPolicy(ChatPolicyBase):
    """Chat policy over an OpenAI-compatible endpoint (the seed's parameters come first).

    Takes an :class:`OpenAIChatConfig` (or a plain ``ChatConfig``) and/or its fields as
    keywords; ``model``, ``max_history``, ``temperature`` and ``base_url`` may come by position.
    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.
    ``timeout`` bounds each attempt in seconds: connecting and reading the whole reply (a
    server that trickles its body cannot stretch it). ``deadline`` bounds the whole call,
    retries and their waits included (default ``timeout * (max_retries + 1)``). Errors that
    retrying cannot fix (400, 401, 404) are not retried. A call that still fails becomes a
    PARSE_ERROR action naming the error, and after ``max_failures`` consecutive failures the
    policy gives up (GIVE_UP). ``fold_system=True`` sends the system prompt inside the first
    user turn, for models whose chat template has no system role (Gemma behind vLLM or
    ``transformers serve``); the default ``None`` learns it: the first time the server
    rejects a conversation (after its retries), the folded form is tried, and kept if it is
    accepted. ``tools=True`` sends the actions as function tools
    (:func:`srelib.policies.llm.tools.tool_definitions`), reads the model's ``tool_calls`` and
    keeps the conversation in tool turns (each result a ``tool`` message answering its call); a
    server that rejects tools is asked again without them, and the policy then reads actions
    from the reply text, as it does by default. ``system_prompt`` replaces the default one (a
    model trained with its own, such as the agent ``srelib agent train`` saves).

    Args:
        config: An :class:`OpenAIChatConfig` or a ``ChatConfig``, or the model's name.
        *args: ``max_history``, ``temperature``, ``base_url``, by position.
        **overrides: Config fields by name, over ``config``.

    Raises:
        TypeError: An unknown keyword (the message lists the valid ones).
        ValueError: A setting out of its range.
        MissingExtra: ``openai`` is not installed (the ``llm`` extra).
    """

    config_class = OpenAIChatConfig
    positional = ("model", "max_history", "temperature", "base_url")
    defaults = {**ChatPolicyBase.defaults, "model": "gpt-4o-mini"}

    def __init__(self, config: ChatConfig | str | None = None, /, *args: Any, **overrides: Any):
        super().__init__(config, *args, **overrides)
        OpenAI = require("openai", "OpenAIChatPolicy").OpenAI
        c = self.config
        self.model, self.temperature, self.max_tokens = c.model, float(c.temperature), int(c.max_tokens)
        self.timeout = float(c.timeout)
        if self.deadline is None:
            self.deadline = self.timeout * (self.max_retries + 1)
        self.max_concurrency = int(c.max_concurrency)
        self.fold_system = c.fold_system
        self._fold_probed = False
        self._probe_lock = threading.RLock()  # a tools probe asks again, folding
        self.tools = bool(c.tools)
        self._tools_probed = False
        self.base_url = c.base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.name = c.name or f"openai:{c.model}"
        self.config = replace(c, deadline=self.deadline)
        self._client = OpenAI(api_key=c.api_key or os.environ.get("OPENAI_API_KEY") or _UNSET_KEY,
                              base_url=self.base_url, timeout=self.timeout, max_retries=0)
        remember_secret(self._client.api_key)  # scrubbed, in any case or encoding, from all we write

    @property
    def tool_turns(self) -> bool:
        """With tools, an episode's conversation follows the tool protocol: each action an
        assistant ``tool_calls`` message, its result a ``tool`` message (GRPO's rollout shape)."""
        return self.tools

    def __repr__(self) -> str:
        return (f"OpenAIChatPolicy(model={self.model!r}, base_url={self.base_url!r}, "
                f"temperature={self.temperature}, max_concurrency={self.max_concurrency})")

    def _complete(self, conversations: list[list[dict]]) -> list[str | BaseException]:
        """One attempt per conversation (the base retries), folded if the server needs that."""
        deadline = self.call_deadline or time.monotonic() + self.deadline
        sent = [fold_system(m) if self.fold_system else m for m in conversations]
        if len(sent) == 1:
            return [self._call_item(0, sent[0], deadline)]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(sent)),
                                thread_name_prefix="srelib-openai") as pool:
            return list(pool.map(self._call_item, range(len(sent)), sent, [deadline] * len(sent)))

    def _call_item(self, item: int, messages: list[dict], deadline: float) -> str | BaseException:
        """One attempt at conversation ``item`` of a batch, recorded under that index. Any
        failure comes back as the exception, so it stays in this conversation's lane."""
        start = time.monotonic()
        try:
            body = self._attempt(messages, deadline)
            data = _decode(body)
            text = _reply_text(data, body)
        except Exception as error:  # noqa: BLE001 - every failure becomes an observation
            self._record(None, None, time.monotonic() - start, item=item,
                         error=self._describe_error(error))
            return error
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        self._record(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")),
                     time.monotonic() - start, item=item)
        return text

    def _replies(self, conversations: list[list[dict]]) -> list[str | BaseException]:
        """Retried replies; without tools for the conversations a server refused with them
        (learnt once)."""
        replies = self._folding(conversations, list(range(len(conversations))))
        refused = [i for i, reply in enumerate(replies) if _server_refused(reply)]
        if not (self.tools and refused):
            return replies
        with self._probe_lock:
            if not self.tools or self._tools_probed:
                return replies
            self._tools_probed, self.tools = True, False
            first = refused[0]
            plain = self._folding([conversations[first]], [first])[0]
            if isinstance(plain, BaseException):
                self.tools = True
                return replies
            log.warning("the server rejected tools; reading actions from the reply text from "
                        "now on")
            replies[first] = plain
            rest = refused[1:]
            for lane, reply in zip(rest, self._folding([conversations[i] for i in rest], rest)):
                replies[lane] = reply
        return replies

    def _folding(self, conversations: list[list[dict]], items: list[int]) -> list[str | BaseException]:
        """Retried replies; with the system prompt folded into the first user turn for the
        conversations a server refused with a system role (learnt once)."""
        if not conversations:
            return []
        deadline = self._deadline_from_now()
        replies = self._with_retries(conversations, deadline, items)
        if self.fold_system is not None:
            return replies
        system = [i for i, m in enumerate(conversations) if m and m[0]["role"] == "system"]
        if any(not isinstance(replies[i], BaseException) for i in system):
            self.fold_system = False
            return replies
        refused = [i for i in system if _server_refused(replies[i])]
        with self._probe_lock:
            if not refused or self.fold_system is not None or self._fold_probed:
                return replies
            self._fold_probed = True  # once, so an outage does not double every call
            first = refused[0]
            folded = self._with_retries([fold_system(conversations[first])], deadline,
                                        [items[first]])[0]
            if isinstance(folded, BaseException):
                return replies
            log.warning("the server rejected the system role; folding it into the first user "
                        "turn from now on")
            self.fold_system, replies[first] = True, folded
            rest = refused[1:]
            again = self._with_retries([conversations[i] for i in rest], deadline,
                                       [items[i] for i in rest]) if rest else []
            for lane, reply in zip(rest, again):
                replies[lane] = reply
        return replies

    def _attempt(self, messages: list[dict], deadline: float) -> bytes:
        """One request's reply body within ``timeout`` and before ``deadline``. It is read in a
        helper thread so that the caller gets control back in time even while the server
        trickles the body or stalls; the helper then closes the connection at the next chunk
        (or at its own read timeout, no longer than the limit)."""
        limit = min(self.timeout, deadline - time.monotonic())
        if limit <= 0:
            raise ReplyTimeout(f"the call's {self.deadline:g} s deadline has passed")
        outcome: dict[str, Any] = {}
        finished, abandoned = threading.Event(), threading.Event()

        def read() -> None:
            try:
                outcome["body"] = self._read_body(messages, limit, abandoned)
            except BaseException as error:  # noqa: BLE001 - handed to the waiting caller
                outcome["error"] = error
            finally:
                finished.set()

        threading.Thread(target=read, daemon=True, name="srelib-openai-read").start()
        if not finished.wait(limit):
            abandoned.set()
            raise ReplyTimeout(f"no complete reply within {limit:.3g} s")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["body"]

    def _read_body(self, messages: list[dict], timeout: float, abandoned: threading.Event) -> bytes:
        """The raw reply body, streamed so that an abandoned read stops at the next chunk."""
        extra: dict[str, Any] = {} if self.seed is None else {"seed": self.seed}
        if self.tools:
            from srelib.policies.llm.tools import tool_definitions

            extra["tools"] = tool_definitions()
        chunks = []
        with self._client.chat.completions.with_streaming_response.create(
                model=self.model, messages=wire_messages(messages, self.tools),
                temperature=self.temperature,
                max_tokens=self.max_tokens, timeout=timeout, **extra) as response:
            for chunk in response.iter_bytes():
                if abandoned.is_set():
                    raise ReplyTimeout("abandoned: the caller stopped waiting")
                chunks.append(chunk)
        return b"".join(chunks)

    def _retryable(self, error: BaseException) -> bool:
        return super()._retryable(error) or _retryable(error)

    def _describe_error(self, error: BaseException) -> str:
        return scrub_secrets(f"{type(error).__name__}: {error}")


def wire_messages(messages: list[dict], tools: bool) -> list[dict]:
    """A conversation as an OpenAI-compatible server takes it. With ``tools``, each tool call
    gets an id and its arguments as a JSON string, and its result (a ``tool`` message) that id;
    without (a server that refused tools), a call is sent as the action's JSON text and its
    result as a user turn."""
    from srelib.policies.llm.prompts import arguments_as_text
    from srelib.policies.llm.tools import tool_call_text

    wired, call_id = [], None
    for position, message in enumerate(arguments_as_text(messages)):
        calls = message.get("tool_calls")
        if calls and tools:  # a transcript's assistant turn holds one call
            call_id = f"call_{position}"
            wired.append({"role": "assistant", "content": message["content"],
                          "tool_calls": [{**calls[0], "id": call_id}]})
        elif calls:
            wired.append({"role": "assistant", "content": tool_call_text(calls[0])})
        elif message["role"] == "tool":
            wired.append({"role": "tool", "tool_call_id": call_id, "content": message["content"]}
                         if tools else {"role": "user", "content": message["content"]})
        else:
            wired.append(message)
    return valid_text(wired)  # a reply's escaped lone surrogate, kept, would fail every later call


def _decode(body: bytes) -> dict:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise ValueError(f"the endpoint's reply is not JSON: {_snippet(body)}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the endpoint's reply is not a JSON object: {_snippet(body)}")
    return data


def _reply_text(data: dict, body: bytes) -> str:
    """The first choice's text; a reply without one is an error the model should hear of."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"the endpoint returned no choices: {_snippet(body)}")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise ValueError(f"the endpoint's first choice has no message: {_snippet(body)}")
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        from srelib.policies.llm.tools import tool_call_text

        return tool_call_text(calls[0])
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError(f"the endpoint returned {type(content).__name__} content, not text")
    return content or ""


def _snippet(body: bytes) -> str:
    return body[:200].decode("utf-8", "replace")


def _count(value: object) -> int | None:
    """A token count from the reply's usage, if it is one."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _server_refused(error: BaseException) -> bool:
    """The server answered, with an error status (not a timeout or a dead connection)."""
    require("openai", "srelib.policies.llm.providers.openai_chat")
    import openai

    return isinstance(error, openai.APIStatusError) and not isinstance(error, openai.RateLimitError)


def _retryable(error: BaseException) -> bool:
    """A timeout, a dropped connection, a rate limit or a server error."""
    require("openai", "srelib.policies.llm.providers.openai_chat")
    import openai

    if isinstance(error, (ReplyTimeout, openai.APITimeoutError, openai.APIConnectionError,
                          openai.RateLimitError, openai.InternalServerError)):
        return True
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500
