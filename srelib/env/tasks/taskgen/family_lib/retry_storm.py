"""A retry storm: the culprit retries every failure, overloading the service it calls."""

from ..families import CALLERS, Effect, Family

FAMILY = Family(
    "retry_storm", "retry_storm",
    symptoms=("load", "errors", "slow"),
    root_cause="retry storm from the <svc> service: its <noun> client retries every failure "
               "with no growing backoff since the deploy that shipped <feature>",
    keywords=("retry", "storm", "<svc>"),
    culprit=Effect(target=(("cpu", (82.0, 95.0)), ("rps", (1500.0, 3200.0)),
                           ("error_rate", (6.0, 18.0))), ramp=5, logs=(
        ("WARN", "Retrying <noun> request (attempt {count}) after a failure", 1, None),
        ("ERROR", "<Noun> request failed after retries: upstream busy", 2, ("error_rate", ">", 5.0)))),
    callers=CALLERS, overloads="callee",
    overload=Effect(target=(("cpu", (85.0, 97.0)), ("latency_p99", (1200.0, 3000.0)),
                            ("error_rate", (5.0, 15.0))), ramp=5, logs=(
        ("WARN", "Request rate from <svc> far above normal: {count} req/s per replica", 1, None),
        ("ERROR", "Shedding load: queue full, rejecting request from <svc>", 2, None))))
