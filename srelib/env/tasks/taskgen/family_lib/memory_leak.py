"""A memory leak: the culprit's heap grows until the OOM killer restarts it; its callers see errors."""

from ..families import CALLERS, Effect, Family

FAMILY = Family(
    "memory_leak", "memory_leak",
    symptoms=("restarts", "slow", "errors"),
    root_cause="memory leak in the <svc> service: <nouns> kept in memory are never released "
               "since the deploy that shipped <feature>",
    keywords=("memory", "leak", "<svc>"),
    culprit=Effect(target=(("cpu", (30.0, 45.0)),), memory_rate=(1.2, 1.8), ramp=30, logs=(
        ("WARN", "GC pressure: heap usage at {memory:.0f}%, GC pause {pause_ms}ms", 2, ("memory", ">", 65.0)),
        ("ERROR", "Allocation failed while handling <nouns>: heap exhausted", 3, ("memory", ">", 80.0)),
        ("FATAL", "OutOfMemoryError: container <svc>-0 killed by the OOM killer (exit code 137)", 1,
         ("memory", ">", 96.0)))),
    callers=CALLERS)
