"""What deploys say: their authors and notes, stock or derived from a feature, as both the
simulation's routine deploys and the task generator's scripted ones write them."""

from __future__ import annotations

AUTHORS = ("alice", "amy", "bob", "carol", "charlie", "dan", "dave", "ed", "erin", "frankie",
           "lib-bot", "deploy-bot")
#: What good deploys say they do: varied, and often in the words of some fault class, so a
#: deploy note alone tells nothing about the fault.
DEPLOY_NOTES = (
    "Add request-id to access logs", "Bump base image to patch openssl",
    "Tune health-check timeout from 2s to 3s", "Add dashboard annotations",
    "Raise the connection pool from 20 to 40 connections",
    "Retry idempotent reads once with backoff on HTTP 503",
    "Tune GC: larger young generation, heap limit at 75% of the container",
    "Move feature flags to the central config service", "Rotate the service account secret",
    "Bump the shared HTTP client library to 4.12", "Pin transitive dependencies in requirements.lock",
    "Take the session registry lock only around the write", "Warm the local cache on startup",
    "Shorten the cache TTL of price lists to 60s", "Add tracing spans around request handlers",
    "Enable gzip on internal responses", "Remove the deprecated /v1/legacy endpoint",
    "Increase the readiness-probe grace period to 20s",
    "Log slow requests above 500ms with their route", "Upgrade the schema registry client",
    "Dependency bumps", "Bug fixes", "Minor performance fixes", "Refactor request validation",
)

#: How a deploy that ships a feature describes it; the generator's culprits and routine
#: deploys of every other service use the same templates, so neither the wording nor the
#: novelty of a note tells a feature that broke from one that did not.
FEATURE_NOTE_TEMPLATES = ("{Feature}", "Ship {feature}", "{area}: {feature}", "Roll out {feature}",
                          "{Feature} ({area})")
_FEATURE_THINGS = ("batched writes", "a read-through cache", "paged listing", "bulk import",
                   "async notifications", "per-tenant limits", "idempotent retries",
                   "lazy loading", "a compact wire format", "scheduled cleanup",
                   "streaming export", "soft deletes", "a warm standby", "shadow reads")
_FEATURE_NOUNS = (("invoice", "invoices"), ("webhook", "webhooks"), ("tenant", "tenants"),
                  ("shipment", "shipments"), ("coupon", "coupons"), ("profile", "profiles"),
                  ("report", "reports"), ("price", "prices"), ("audit", "audit events"),
                  ("export", "exports"), ("device", "devices"), ("address", "addresses"),
                  ("wishlist", "wishlists"), ("schedule", "schedules"), ("ledger", "ledger rows"),
                  ("segment", "segments"))
_FEATURE_AREAS = ("store", "client", "worker", "export", "index", "sync", "cache", "events")


NOTE_CHOICES, FIRST_NOTE_CHOICES = 2 * len(DEPLOY_NOTES), 3 * len(DEPLOY_NOTES)


def feature_note(template: str, feature: str, area: str) -> str:
    """A deploy note that ships ``feature`` in module ``area``, in one of
    :data:`FEATURE_NOTE_TEMPLATES`."""
    return (template.replace("{Feature}", feature[:1].upper() + feature[1:])
            .replace("{feature}", feature).replace("{area}", area))


def routine_note(k: int, sha: str, first_of: str | None = None) -> str:
    """The note of a routine deploy: ``k`` (drawn below :data:`NOTE_CHOICES`) picks a stock
    note, or, for the upper half, a feature note derived from the deploy's ``sha`` (no further
    draw, so an episode's random stream is the same whichever note it gets). The oldest deploy
    of a service (``first_of``: the service) draws ``k`` below :data:`FIRST_NOTE_CHOICES`: the
    top third is its "Initial ..." release, as likely on any service."""
    if k >= NOTE_CHOICES:
        if first_of is None:
            raise ValueError(f"k={k}: only a service's first deploy may be its initial release")
        return f"Initial {first_of.replace('_', ' ')} release"
    if k < len(DEPLOY_NOTES):
        return DEPLOY_NOTES[k]
    x = int(sha, 16)
    noun, plural = _FEATURE_NOUNS[x % len(_FEATURE_NOUNS)]
    thing = _FEATURE_THINGS[(x >> 4) % len(_FEATURE_THINGS)]
    area = f"{noun.split()[0]}_{_FEATURE_AREAS[(x >> 8) % len(_FEATURE_AREAS)]}"
    template = FEATURE_NOTE_TEMPLATES[(x >> 12) % len(FEATURE_NOTE_TEMPLATES)]
    return feature_note(template, f"{thing} for {plural}", area)

