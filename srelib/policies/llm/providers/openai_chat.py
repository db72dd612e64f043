"""OpenAIChatPolicy: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
``transformers serve``) through the official ``openai`` client.

Each attempt has a time limit for connecting and reading the whole reply, and each call a
total deadline over all its attempts, so a server that trickles its reply or stalls cannot hold
a call past it. Retries are bounded, with exponential backoff on 429, 5xx, timeouts and dropped
connections, waiting as long as a ``Retry-After`` header asks, up to a cap. Every call's tokens and latency land in ``usage``. ``act_batch`` runs up to
``max_concurrency`` calls at once on plain threads, so it works the same inside Jupyter's
running event loop, and a failed or malformed reply affects only its own conversation. The API
key never appears in reprs, actions or logs.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from srelib.extras import require
from srelib.env.json_copy import valid_text
from srelib.policies.llm.chat import ChatPolicyBase
from srelib.policies.llm.providers import provider
from srelib.redact import remember_secret, scrub_secrets
from srelib.policies.llm.prompts import SYSTEM_PROMPT, fold_system

log = logging.getLogger(__name__)

_UNSET_KEY = "not-set"


class ReplyTimeout(TimeoutError):
    """An attempt got no complete reply in time (its own limit, or the call's deadline)."""


@provider("openai")
class OpenAIChatPolicy(ChatPolicyBase):
    """Chat policy over an OpenAI-compatible endpoint (the seed's parameters come first).

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.
    ``timeout`` bounds each attempt in seconds: connecting and reading the whole reply (a
    server that trickles its body cannot stretch it). ``deadline`` bounds the whole call,
    retries and their waits included (default ``timeout * (max_retries + 1)``).
    ``max_retries`` retries follow a failed attempt (so at most ``max_retries + 1`` attempts),
    waiting ``backoff * 2**attempt`` seconds, or what the server's ``Retry-After`` asks if that
    is longer, up to ``max_retry_after``; a wait that would pass the deadline ends the call
    instead. Errors that retrying cannot fix (400, 401, 404) are not retried. A call that still
    fails becomes a PARSE_ERROR action naming the error, and after ``max_failures`` consecutive failures the policy gives up (GIVE_UP).
    ``fold_system=True`` sends the system prompt inside the first user turn, for models whose
    chat template has no system role (Gemma behind vLLM or ``transformers serve``); the default
    ``None`` learns it: the first time the server rejects a conversation, the folded form is
    tried, and kept if it is accepted. ``tools=True`` sends the actions as function tools
    (:func:`srelib.policies.llm.tools.tool_definitions`), reads the model's ``tool_calls`` and keeps
    the conversation in tool turns (each result a ``tool`` message answering its call); a
    server that rejects tools is asked again without them, and the policy then reads actions
    from the reply text, as it does by default. ``system_prompt`` replaces the default one (a
    model trained with its own, such as the agent ``srelib agent train`` saves).
    """

    def __init__(self, model: str = "gpt-4o-mini", max_history: int = 8,
                 temperature: float = 0.2, base_url: str | None = None, *,
                 api_key: str | None = None, timeout: float = 60.0,
                 deadline: float | None = None, max_retries: int = 3,
                 backoff: float = 0.5, max_retry_after: float = 30.0, max_tokens: int = 600,
                 max_concurrency: int = 8, max_failures: int = 3, obs_chars: int = 6000,
                 max_prompt_chars: int = 32000, fold_system: bool | None = None,
                 tools: bool = False, system_prompt: str = SYSTEM_PROMPT,
                 name: str | None = None):
        super().__init__(max_history=max_history, max_failures=max_failures,
                         obs_chars=obs_chars, max_prompt_chars=max_prompt_chars,
                         system_prompt=system_prompt)
        OpenAI = require("openai", "OpenAIChatPolicy").OpenAI
        if max_retries < 0 or max_concurrency < 1 or timeout <= 0 or (deadline or 1) <= 0:
            raise ValueError("need max_retries >= 0, max_concurrency >= 1, timeout > 0 and "
                             "deadline > 0")
        self.model, self.temperature, self.max_tokens = model, float(temperature), int(max_tokens)
        self.timeout, self.max_retries, self.backoff = float(timeout), int(max_retries), float(backoff)
        self.max_retry_after = float(max_retry_after)
        self.deadline = self.timeout * (self.max_retries + 1) if deadline is None else float(deadline)
        self.max_concurrency = int(max_concurrency)
        self.fold_system = fold_system
        self._fold_probed = False
        self._fold_lock = threading.Lock()
        self.tools = bool(tools)
        self._tools_probed = False
        self._item = threading.local()  # which conversation of a batch this thread serves
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.name = name or f"openai:{model}"
        self._client = OpenAI(api_key=api_key or os.environ.get("OPENAI_API_KEY") or _UNSET_KEY,
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
        if len(conversations) == 1:
            return [self._call_item(0, conversations[0])]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(conversations)),
                                thread_name_prefix="srelib-openai") as pool:
            return list(pool.map(self._call_item, range(len(conversations)), conversations))

    def _call_item(self, item: int, messages: list[dict]) -> str | BaseException:
        """Serve conversation ``item`` of a batch; its usage records carry that index. Any
        failure comes back as the exception, so it stays in this conversation's lane."""
        self._item.value = item
        try:
            return self._call(messages)
        except Exception as error:  # noqa: BLE001 - one lane's failure is that lane's reply
            return error

    def _call(self, messages: list[dict]) -> str | BaseException:
        """One completion; without tools if the server turns them down (learnt once)."""
        reply = self._call_folding(messages)
        if self.tools and _server_refused(reply):
            with self._fold_lock:
                if self.tools and not self._tools_probed:
                    self._tools_probed = True
                    self.tools = False
                    plain = self._call_folding(messages)
                    if isinstance(plain, BaseException):
                        self.tools = True
                        return reply
                    log.warning("the server rejected tools; reading actions from the reply "
                                "text from now on")
                    return plain
            if not self.tools:
                return self._call_folding(messages)
        return reply

    def _call_folding(self, messages: list[dict]) -> str | BaseException:
        """One completion, with the system prompt folded in if the server needs that."""
        deadline = time.monotonic() + self.deadline
        if self.fold_system:
            return self._call_with_retries(fold_system(messages), deadline)
        reply = self._call_with_retries(messages, deadline)
        if self.fold_system is None and messages and messages[0]["role"] == "system":
            if not isinstance(reply, BaseException):
                self.fold_system = False
            elif _server_refused(reply):
                with self._fold_lock:  # one thread probes; the others wait for its verdict
                    if self.fold_system is None and not self._fold_probed:
                        self._fold_probed = True  # once, so an outage does not double every call
                        folded = self._call_with_retries(fold_system(messages), deadline)
                        if isinstance(folded, BaseException):
                            return reply
                        log.warning("the server rejected the system role; folding it into "
                                    "the first user turn from now on")
                        self.fold_system = True
                        return folded
                if self.fold_system:
                    return self._call_with_retries(fold_system(messages), deadline)
        return reply

    def _call_with_retries(self, messages: list[dict], deadline: float) -> str | BaseException:
        """One completion with retries, all before ``deadline`` (``time.monotonic``); the reply
        text, or the exception that ended it."""
        start, attempt = time.monotonic(), 0
        while True:
            try:
                body = self._attempt(messages, deadline)
                data = _decode(body)
                text = _reply_text(data, body)
                usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
                self._record(_count(usage.get("prompt_tokens")),
                             _count(usage.get("completion_tokens")), time.monotonic() - start,
                             attempts=attempt + 1, item=getattr(self._item, "value", 0))
                return text
            except Exception as error:  # noqa: BLE001 - every failure becomes an observation
                wait = self._retry_wait(error, attempt)
                if wait is not None and time.monotonic() + wait < deadline:
                    log.warning("chat call failed (%s); retry %d of %d in %.2f s",
                                self._describe_error(error), attempt + 1, self.max_retries, wait)
                    time.sleep(wait)
                    attempt += 1
                    continue
                self._record(None, None, time.monotonic() - start, attempts=attempt + 1,
                             item=getattr(self._item, "value", 0),
                             error=self._describe_error(error))
                return error

    def _retry_wait(self, error: BaseException, attempt: int) -> float | None:
        """Seconds to wait before retrying after ``error``, or None: no retry."""
        if attempt >= self.max_retries or not _retryable(error):
            return None
        wait = self.backoff * 2 ** attempt
        asked = _retry_after(error)
        return wait if asked is None else max(wait, min(asked, self.max_retry_after))

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


def _retry_after(error: BaseException) -> float | None:
    """Seconds a ``Retry-After`` (or ``retry-after-ms``) header of the error's response asks."""
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
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_refused(error: BaseException) -> bool:
    """The server answered, with an error status (not a timeout or a dead connection)."""
    require("openai", "srelib.policies.llm.providers.openai_chat")
    import openai

    return isinstance(error, openai.APIStatusError) and not isinstance(error, openai.RateLimitError)


def _retryable(error: BaseException) -> bool:
    require("openai", "srelib.policies.llm.providers.openai_chat")
    import openai

    if isinstance(error, (ReplyTimeout, openai.APITimeoutError, openai.APIConnectionError,
                          openai.RateLimitError, openai.InternalServerError)):
        return True
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500
