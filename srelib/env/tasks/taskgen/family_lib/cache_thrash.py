"""Cache thrash: the culprit's cache keys defeat the shared cache, which evicts without end."""

from ..families import CALLERS, Effect, Family

FAMILY = Family(
    "cache_thrash", "cache_thrash",
    symptoms=("slow", "load", "stalls"),
    root_cause="cache thrash caused by the <svc> service: its <noun> cache keys defeat the "
               "shared cache since the deploy that shipped <feature>",
    keywords=("cache", "thrash", "<svc>"),
    culprit=Effect(target=(("latency_p95", (450.0, 800.0)), ("latency_p99", (1100.0, 2200.0)),
                           ("cpu", (45.0, 70.0))), ramp=6, logs=(
        ("WARN", "Cache hit ratio for <nouns> at {count}% of the usual", 2, None),
        ("WARN", "Cache miss storm: {count} misses per second on <noun> keys", 3, None))),
    callers=CALLERS, overloads="cache",
    overload=Effect(target=(("cpu", (82.0, 96.0)), ("latency_p99", (40.0, 90.0))), ramp=4, logs=(
        ("WARN", "Evicting {count} keys per second: memory limit reached", 1, None),
        ("WARN", "Key churn from <svc>: most new keys are never read", 3, None))))
