"""A deadlock: the culprit's workers wait on locks and its requests time out."""

from ..families import CALLERS, Effect, Family

FAMILY = Family(
    "deadlock", "deadlock",
    symptoms=("stalls", "slow", "restarts"),
    root_cause="deadlock in the <svc> service: <nouns> code takes a lock it already holds or "
               "takes two locks in opposite orders since the deploy that shipped <feature>",
    keywords=("deadlock", "lock", "<svc>"),
    culprit=Effect(target=(("latency_p95", (2500.0, 5000.0)), ("latency_p99", (6000.0, 12000.0)),
                           ("rps", (40.0, 90.0)), ("cpu", (4.0, 9.0)), ("error_rate", (6.0, 12.0))),
                   ramp=5, logs=(
        ("WARN", "{count} worker threads waiting on a lock in the <noun> code", 1, None),
        ("ERROR", "Request timed out after 30000ms in the <noun> handler", 2, None))),
    callers=CALLERS)
