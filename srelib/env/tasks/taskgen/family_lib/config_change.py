"""A configuration change: the culprit reads a setting wrongly and rejects requests."""

from ..families import CALLERS, Effect, Family

FAMILY = Family(
    "config_change", "config_change",
    symptoms=("errors", "restarts", "stalls"),
    root_cause="configuration change in the <svc> service: a <noun> setting is read wrongly "
               "since the deploy that shipped <feature>",
    keywords=("configuration", "setting", "<svc>"),
    culprit=Effect(target=(("error_rate", (25.0, 48.0)), ("latency_p99", (400.0, 900.0))),
                   status_floor="degraded", ramp=2, logs=(
        ("ERROR", "<Noun> request rejected: invalid setting value in effect", 1, None),
        ("WARN", "Settings loaded for <nouns>; {count} requests failed validation", 3, None))),
    callers=CALLERS, ago=(25, 70))
