"""Edge authentication: the gateway asks auth whether a bearer token is valid before routing."""

import time

from gateway import settings
from gateway.budget import RetryBudget


class AuthUnavailable(Exception):
    """auth answered 503: it is overloaded or restarting; ``retry_after`` is its hint in seconds."""

    def __init__(self, message: str = "503 from auth", retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class AuthTimeout(Exception):
    """auth did not answer within the check's timeout."""


class Rejected(Exception):
    """auth answered: the token is unknown, expired or revoked."""


class TokenChecker:
    """Checks bearer tokens with auth.

    ``transport.check(token, timeout_s)`` returns auth's answer, a dict with ``valid`` and, for
    a valid token, its claims; it raises AuthUnavailable or AuthTimeout when auth cannot answer.
    The claims of a valid token are reused for ``settings.VALID_TOKEN_TTL_S`` seconds.
    """

    def __init__(self, transport, *, budget=None, sleep=time.sleep, clock=time.monotonic):
        self._transport = transport
        self.budget = budget or RetryBudget(settings.RETRY_RATIO, settings.RETRY_RESERVE)
        self._sleep = sleep
        self._clock = clock
        self._valid: dict[str, tuple[float, dict]] = {}

    def check(self, token: str) -> dict:
        """auth's claims for a valid ``token``; raises Rejected, AuthUnavailable or AuthTimeout."""
        now = self._clock()
        cached = self._valid.get(token)
        if cached is not None and now - cached[0] < settings.VALID_TOKEN_TTL_S:
            return cached[1]
        answer = self._ask_auth(token)
        self._valid[token] = (now, answer)
        return answer

    def _ask_auth(self, token: str) -> dict:
        self.budget.record_request()
        attempts = settings.TOKEN_CHECK_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                answer = self._transport.check(token, settings.TOKEN_CHECK_TIMEOUT_S)
            except (AuthTimeout, AuthUnavailable) as exc:
                # every retry spends the budget: a struggling auth is never hit harder
                if attempt == attempts or not self.budget.withdraw():
                    raise
                if isinstance(exc, AuthUnavailable):  # a timeout has already waited
                    self._sleep(self._pause(exc, attempt))
                continue
            if not answer.get("valid"):
                self._valid.pop(token, None)
                raise Rejected(answer.get("reason", "invalid token"))
            return answer

    @staticmethod
    def _pause(exc: AuthUnavailable, attempt: int) -> float:
        """Seconds to wait before retrying a 503: auth's Retry-After hint, capped, else backoff."""
        if exc.retry_after is not None:
            return min(max(exc.retry_after, 0.0), settings.MAX_RETRY_AFTER_S)
        return settings.RETRY_BACKOFF_S * attempt
