"""Auth service configuration, read once from the environment at startup.

The JWT signing secret rotates without logging everyone out: tokens are signed with
the current secret, and tokens signed with a previous secret (AUTH_JWT_PREVIOUS_SECRET, comma
separated) stay valid until they expire.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping


class ConfigError(RuntimeError):
    """The service cannot start with this configuration."""


@dataclass(frozen=True)
class AuthConfig:
    env: str
    jwt_secret: str
    token_ttl_seconds: int = 900
    previous_secrets: tuple[str, ...] = ()


def load_config(environ: Mapping[str, str] | None = None) -> AuthConfig:
    """Build the config; refuse to start without a signing secret.

    The secret manager still injects the key as AUTH_JWT_SECRET, so both names are read.
    """
    environ = os.environ if environ is None else environ
    secret = environ.get("AUTH_JWT_SIGNING_SECRET") or environ.get("AUTH_JWT_SECRET")
    if not secret:
        raise ConfigError("no signing secret: set AUTH_JWT_SIGNING_SECRET or AUTH_JWT_SECRET")
    previous = tuple(s for s in environ.get("AUTH_JWT_PREVIOUS_SECRET", "").split(",") if s)
    ttl = int(environ.get("AUTH_TOKEN_TTL_SECONDS", "900"))
    return AuthConfig(env=environ.get("AUTH_ENV", "prod"), jwt_secret=secret,
                      token_ttl_seconds=ttl, previous_secrets=previous)
