"""Pool exhaustion: callers of the culprit wait for a free slot until they time out."""

from ..families import CALLERS, Effect, Family

FAMILY = Family(
    "pool_exhaustion", "pool_exhaustion",
    symptoms=("slow", "errors", "stalls"),
    root_cause="pool exhaustion in the <svc> service: a failed call never hands its slot "
               "back to the <noun> pool since the deploy that shipped <feature>",
    keywords=("pool", "exhaustion", "<svc>"),
    culprit=Effect(target=(("latency_p95", (700.0, 1500.0)), ("latency_p99", (1800.0, 4000.0)),
                           ("error_rate", (8.0, 22.0)), ("cpu", (8.0, 14.0))), ramp=8, logs=(
        ("WARN", "<Noun> pool: 0 idle, {count} callers waiting for a slot", 1, None),
        ("ERROR", "Timed out after {ms}ms waiting for a free <noun> slot", 2, ("error_rate", ">", 5.0)))),
    callers=CALLERS)
