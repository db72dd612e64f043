"""A shared dependency change: the culprit's vendored helper library changed behaviour."""

from ..families import Effect, Family

FAMILY = Family(
    "shared_dependency", "shared_dependency",
    symptoms=("errors", "load", "restarts"),
    root_cause="shared dependency change in the <svc> service: its vendored helper library "
               "changed behaviour in the deploy that shipped <feature>",
    keywords=("shared", "library", "<svc>"),
    culprit=Effect(target=(("error_rate", (14.0, 30.0)),), status_floor="degraded", ramp=3, logs=(
        ("ERROR", "ValueError in common helpers: result does not match the contract for <nouns>", 1, None),
        ("WARN", "{count} <noun> records failed the consistency check", 3, None))),
    callers=Effect(target=(("error_rate", (6.0, 16.0)),), ramp=4, logs=(
        ("ERROR", "Invalid response from <svc>: values failed validation", 2, None),)))
