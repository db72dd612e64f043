"""OpenAIChatPolicy: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
``transformers serve``) through the official ``openai`` client.

Calls have an explicit timeout and bounded retries with exponential backoff on 429, 5xx,
timeouts and dropped connections; every call's tokens and latency land in ``usage``.
``act_batch`` runs up to ``max_concurrency`` calls at once on plain threads, so it works the
same inside Jupyter's running event loop. The API key never appears in reprs, actions or logs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from srelib.policies.base import ChatPolicyBase
from srelib.policies.prompts import fold_system

log = logging.getLogger(__name__)

_UNSET_KEY = "not-set"


class OpenAIChatPolicy(ChatPolicyBase):
    """Chat policy over an OpenAI-compatible endpoint (the seed's parameters come first).

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.
    ``max_retries`` retries follow a failed call (so at most ``max_retries + 1`` attempts),
    waiting ``backoff * 2**attempt`` seconds; errors that retrying cannot fix (400, 401, 404)
    are not retried. A call that still fails becomes a PARSE_ERROR action naming the error,
    and after ``max_failures`` consecutive failures the policy gives up (GIVE_UP).
    ``fold_system=True`` sends the system prompt inside the first user turn, for models whose
    chat template has no system role (Gemma behind vLLM or ``transformers serve``); the default
    ``None`` learns it: the first time the server rejects a conversation, the folded form is
    tried, and kept if it is accepted.
    """

    def __init__(self, model: str = "gpt-4o-mini", max_history: int = 8,
                 temperature: float = 0.2, base_url: str | None = None, *,
                 api_key: str | None = None, timeout: float = 60.0, max_retries: int = 3,
                 backoff: float = 0.5, max_tokens: int = 600, max_concurrency: int = 8,
                 max_failures: int = 3, obs_chars: int = 6000, max_prompt_chars: int = 32000,
                 fold_system: bool | None = None, name: str | None = None):
        super().__init__(max_history=max_history, max_failures=max_failures,
                         obs_chars=obs_chars, max_prompt_chars=max_prompt_chars)
        try:
            from openai import OpenAI
        except ImportError as e:  # pragma: no cover - depends on the install
            raise RuntimeError("the openai package is not installed: pip install 'srelib[llm]'") from e
        if max_retries < 0 or max_concurrency < 1 or timeout <= 0:
            raise ValueError("need max_retries >= 0, max_concurrency >= 1 and timeout > 0")
        self.model, self.temperature, self.max_tokens = model, float(temperature), int(max_tokens)
        self.timeout, self.max_retries, self.backoff = float(timeout), int(max_retries), float(backoff)
        self.max_concurrency = int(max_concurrency)
        self.fold_system = fold_system
        self._fold_probed = False
        self._fold_lock = threading.Lock()
        self._item = threading.local()  # which conversation of a batch this thread serves
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.name = name or f"openai:{model}"
        self._client = OpenAI(api_key=api_key or os.environ.get("OPENAI_API_KEY") or _UNSET_KEY,
                              base_url=self.base_url, timeout=self.timeout, max_retries=0)

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
        """Serve conversation ``item`` of a batch; its usage records carry that index."""
        self._item.value = item
        return self._call(messages)

    def _call(self, messages: list[dict]) -> str | BaseException:
        """One completion, with the system prompt folded in if the server needs that."""
        if self.fold_system:
            return self._call_with_retries(fold_system(messages))
        reply = self._call_with_retries(messages)
        if self.fold_system is None and messages and messages[0]["role"] == "system":
            if not isinstance(reply, BaseException):
                self.fold_system = False
            elif _server_refused(reply):
                with self._fold_lock:  # one thread probes; the others wait for its verdict
                    if self.fold_system is None and not self._fold_probed:
                        self._fold_probed = True  # once, so an outage does not double every call
                        folded = self._call_with_retries(fold_system(messages))
                        if isinstance(folded, BaseException):
                            return reply
                        log.warning("the server rejected the system role; folding it into "
                                    "the first user turn from now on")
                        self.fold_system = True
                        return folded
                if self.fold_system:
                    return self._call_with_retries(fold_system(messages))
        return reply

    def _call_with_retries(self, messages: list[dict]) -> str | BaseException:
        """One completion with retries; the reply text, or the exception that ended it."""
        start, attempt = time.perf_counter(), 0
        extra = {} if self.seed is None else {"seed": self.seed}
        while True:
            try:
                response = self._client.chat.completions.create(
                    model=self.model, messages=messages, temperature=self.temperature,
                    max_tokens=self.max_tokens, **extra)
                text = _reply_text(response)
                usage = getattr(response, "usage", None)
                self._record(getattr(usage, "prompt_tokens", None),
                             getattr(usage, "completion_tokens", None),
                             time.perf_counter() - start, attempts=attempt + 1,
                             item=getattr(self._item, "value", 0))
                return text
            except Exception as error:  # noqa: BLE001 - every failure becomes an observation
                if attempt < self.max_retries and _retryable(error):
                    log.warning("chat call failed (%s); retry %d of %d",
                                self._describe_error(error), attempt + 1, self.max_retries)
                    time.sleep(self.backoff * 2 ** attempt)
                    attempt += 1
                    continue
                self._record(None, None, time.perf_counter() - start, attempts=attempt + 1,
                             item=getattr(self._item, "value", 0),
                             error=self._describe_error(error))
                return error

    def _describe_error(self, error: BaseException) -> str:
        text = f"{type(error).__name__}: {error}"
        key = self._client.api_key
        return text.replace(key, "***") if key and key != _UNSET_KEY else text


def _reply_text(response: Any) -> str:
    """The first choice's text; a response without one is an error the model should hear of."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise ValueError(f"the endpoint returned no choices: {str(response)[:200]}")
    return choices[0].message.content or ""


def _server_refused(error: BaseException) -> bool:
    """The server answered, with an error status (not a timeout or a dead connection)."""
    import openai

    return isinstance(error, openai.APIStatusError) and not isinstance(error, openai.RateLimitError)


def _retryable(error: BaseException) -> bool:
    import openai

    if isinstance(error, (openai.APITimeoutError, openai.APIConnectionError,
                          openai.RateLimitError, openai.InternalServerError)):
        return True
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500
