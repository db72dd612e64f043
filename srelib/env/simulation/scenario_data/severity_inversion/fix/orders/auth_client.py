"""Client for the auth service's token validation endpoint."""

import time

from orders.backoff import backoff_delays


class AuthUnavailable(Exception):
    """auth did not answer (timeout, overload, 5xx); the call may be retried."""


class AuthRejected(Exception):
    """auth answered that the token is invalid or expired; never retried."""


class AuthClient:
    """Validates customer tokens with auth on behalf of orders.

    A validation that fails with AuthUnavailable is retried at most
    ``max_retries`` times. Retries are spaced with capped exponential backoff
    and full jitter (``orders.backoff``), so when auth struggles every orders
    replica backs off instead of multiplying its load.

    Claims of a validated token are cached for ``cache_ttl`` seconds, so the
    repeated checks of one checkout cost a single auth call.
    """

    def __init__(self, transport, *, max_retries=3, base_delay=0.05, max_delay=1.0,
                 sleep=time.sleep, rng=None, cache_ttl=30.0, clock=time.monotonic):
        self._transport = transport
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._sleep = sleep
        self._rng = rng
        self.cache_ttl = cache_ttl
        self._clock = clock
        self._cache = {}

    def validate(self, token: str) -> dict:
        """Return the claims of ``token``; raise AuthRejected or AuthUnavailable."""
        now = self._clock()
        cached = self._cache.get(token)
        if cached is not None and now - cached[0] < self.cache_ttl:
            return cached[1]
        claims = self._call_with_retries(lambda: self._transport.validate(token))
        self._cache[token] = (now, claims)
        return claims

    def _call_with_retries(self, call):
        pauses = backoff_delays(self.max_retries, self.base_delay, self.max_delay, self._rng)
        for pause in pauses:
            try:
                return call()
            except AuthUnavailable:
                self._sleep(pause)
        return call()
