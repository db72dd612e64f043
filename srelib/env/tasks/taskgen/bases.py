"""One small working repository per service: the base every generated task of it starts from.

A base is a package with one domain module, its visible tests and a README; the components a
task's bug lives in (:mod:`.shapes`) are added on top by the task's history. ``nouns`` are the
things the service handles; a shape instantiated for a noun is a bug site.
"""

from __future__ import annotations

from dataclasses import dataclass

from srelib.env.actions import SERVICES


@dataclass(frozen=True)
class Base:
    """A service's base repository."""

    service: str
    package: str
    description: str
    nouns: tuple  # ((singular, plural), ...)
    core: str  # the package's domain module, <package>/core.py
    core_tests: str

    def files(self) -> dict[str, str]:
        """The base tree: package, core module, its tests and a README."""
        title = self.service.replace("_", " ")
        return {
            "README.md": (f"# {title}\n\n{self.description}\n\n"
                          f"The code lives in `{self.package}/`; run the tests with "
                          "`python -m pytest tests`.\n"),
            f"{self.package}/__init__.py": f'"""The {title} service."""\n',
            f"{self.package}/core.py": self.core,
            "tests/test_core.py": self.core_tests,
        }


def _base(service, package, description, nouns, core, core_tests) -> Base:
    return Base(service, package, description, tuple(nouns), core, core_tests)


BASES: dict[str, Base] = {b.service: b for b in (
    _base("api_gateway", "gateway",
          "The API gateway: routes public requests to the services behind it.",
          [("route", "routes"), ("tenant", "tenants"), ("upstream", "upstreams")],
          '''"""Route matching for public requests."""


def match_route(routes, path):
    """The service whose route prefix is the longest match for ``path``, or None."""
    best = None
    for prefix, service in routes.items():
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, service)
    return best[1] if best else None
''',
          '''from gateway.core import match_route


def test_longest_prefix_wins():
    routes = {"/": "web", "/orders": "orders"}
    assert match_route(routes, "/orders/7") == "orders"
    assert match_route({}, "/x") is None
'''),
    _base("auth", "auth",
          "The auth service: signs users in and checks the tokens of every request.",
          [("session", "sessions"), ("token", "tokens"), ("login", "logins")],
          '''"""Credential checks."""

import hashlib
import hmac


def password_matches(stored_hex, salt, password):
    """Whether ``password`` hashes (PBKDF2-SHA256, 1000 rounds) to ``stored_hex``."""
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), 1000).hex()
    return hmac.compare_digest(digest, stored_hex)
''',
          '''import hashlib

from auth.core import password_matches


def test_password_check():
    stored = hashlib.pbkdf2_hmac("sha256", b"pw", b"s", 1000).hex()
    assert password_matches(stored, "s", "pw") and not password_matches(stored, "s", "no")
'''),
    _base("orders", "orders",
          "The orders service: places customer orders and tracks them until they ship.",
          [("quote", "quotes"), ("cart", "carts"), ("receipt", "receipts")],
          '''"""Order totals."""


def order_total(lines):
    """The total in cents of ``lines``, each ``(unit_cents, quantity)``."""
    if any(quantity < 0 for _, quantity in lines):
        raise ValueError("quantities must not be negative")
    return sum(unit * quantity for unit, quantity in lines)
''',
          '''import pytest

from orders.core import order_total


def test_total():
    assert order_total([(250, 2), (100, 1)]) == 600
    with pytest.raises(ValueError):
        order_total([(1, -1)])
'''),
    _base("payment", "payment",
          "The payment service: authorises and captures card payments for orders.",
          [("charge", "charges"), ("refund", "refunds"), ("payout", "payouts")],
          '''"""Card checks."""


def luhn_valid(number):
    """Whether the card ``number`` (digits, spaces allowed) passes the Luhn check."""
    digits = [int(c) for c in number.replace(" ", "")][::-1]
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d * 2 > 9 else d * 2) for i, d in enumerate(digits))
    return len(digits) > 1 and total % 10 == 0
''',
          '''from payment.core import luhn_valid


def test_luhn():
    assert luhn_valid("4242 4242 4242 4242") and not luhn_valid("4242 4242 4242 4241")
'''),
    _base("cache", "cachesvc",
          "The cache service: a shared key-value cache the other services keep hot data in.",
          [("entry", "entries"), ("shard", "shards"), ("lease", "leases")],
          '''"""Shard placement."""

import zlib


def shard_for(key, shards):
    """The shard (0..shards-1) that holds ``key``; stable across processes."""
    if shards < 1:
        raise ValueError("shards must be at least 1")
    return zlib.crc32(key.encode()) % shards
''',
          '''from cachesvc.core import shard_for


def test_placement_is_stable():
    assert shard_for("k", 8) == shard_for("k", 8) and 0 <= shard_for("x", 3) < 3
'''),
    _base("database", "dbsvc",
          "The database service: the primary store behind auth, orders and payment.",
          [("query", "queries"), ("replica", "replicas"), ("migration", "migrations")],
          '''"""Query text helpers."""


def placeholders(count):
    """``count`` positional placeholders for an IN clause: ``"(?, ?, ?)"``."""
    if count < 1:
        raise ValueError("count must be at least 1")
    return "(" + ", ".join("?" * count) + ")"
''',
          '''from dbsvc.core import placeholders


def test_placeholders():
    assert placeholders(3) == "(?, ?, ?)"
'''),
    _base("queue", "mq",
          "The queue service: carries payment and order events between services.",
          [("message", "messages"), ("consumer", "consumers"), ("topic", "topics")],
          '''"""Message envelopes."""

import json


def envelope(topic, payload, attempt=1):
    """The wire form of a message: JSON with the topic, the attempt and the payload."""
    return json.dumps({"topic": topic, "attempt": attempt, "payload": payload}, sort_keys=True)
''',
          '''import json

from mq.core import envelope


def test_envelope_round_trip():
    assert json.loads(envelope("t", {"a": 1}))["payload"] == {"a": 1}
'''),
)}

if tuple(BASES) != SERVICES:
    raise RuntimeError(f"taskgen needs one base per service, in SERVICES order: {SERVICES}")
