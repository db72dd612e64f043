"""Runtime settings of the orders service that are not per-environment secrets."""

from orders.retry import RetryPolicy

#: Base URL of the auth service's token introspection API.
AUTH_URL = "http://auth.internal:8080/v1/introspect"

#: Seconds one introspection request may take.
AUTH_TIMEOUT_S = 2.0

#: Retries of introspection calls that auth did not answer.
AUTH_RETRY = RetryPolicy(attempts=3, base_delay=0.1, max_delay=2.0, jitter=True)
