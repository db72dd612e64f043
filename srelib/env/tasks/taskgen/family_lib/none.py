"""No fault: organic load slows the service and its callers, tripping alerts as a fault would."""

from ..families import Effect, Family

FAMILY = Family(
    "none", "none",
    symptoms=("slow", "errors", "load", "stalls", "restarts"),
    root_cause="no fault: <svc> is working normally; the deploy that shipped <feature> is "
               "fine and the slowness is organic load, which the service absorbs",
    keywords=("no", "fault", "normal"),
    culprit=Effect(target=(("rps", (1300.0, 2400.0)), ("cpu", (74.0, 90.0)),
                           ("latency_p95", (300.0, 620.0)), ("latency_p99", (750.0, 1500.0))),
                   ramp=4, logs=(
        ("INFO", "Request rate above the usual for this hour; autoscaler added a replica", 4, None),
        ("INFO", "Request latency p99 {latency_p99:.0f}ms under organic load", 3, None))),
    callers=Effect(target=(("latency_p95", (200.0, 450.0)), ("latency_p99", (450.0, 1200.0)),
                           ("error_rate", (2.0, 12.0))),
                   ramp=5, logs=(("INFO", "Calls to <svc> slower than usual: p99 {latency_p99:.0f}ms",
                                  3, None),)),
    ago=(20, 50))
