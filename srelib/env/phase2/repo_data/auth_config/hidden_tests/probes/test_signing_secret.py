"""Probes for auth.config and token rotation (cascading_failure); judged by checks/."""

from auth.config import load_config
from auth.server import AuthServer
from auth.token import TokenService


def _server(environ):
    return AuthServer(load_config(environ))


def _login_then_validate(server, user):
    login = server.login(user)
    validated = server.validate(login["token"]) if "token" in login else None
    return {"login_status": login["status"], "validated": validated}


def _draw_login(rng):
    """A signing secret and a user, drawn for one grading."""
    return f"key-{rng.getrandbits(64):x}", f"user-{rng.getrandbits(40):x}"



def probe_production_secret_name_still_signs_tokens(rng):
    secret, user = _draw_login(rng)
    return _login_then_validate(_server({"AUTH_JWT_SECRET": secret, "AUTH_ENV": "prod"}), user)


def _draw_startup(rng):
    """A signing secret and a user, drawn for one grading."""
    return f"key-{rng.getrandbits(64):x}", f"user-{rng.getrandbits(40):x}"



def probe_missing_secret_stops_the_service_at_startup(rng):
    secret, user = _draw_startup(rng)
    try:
        load_config({"AUTH_ENV": "prod"})
        refused = None
    except Exception as exc:
        refused = type(exc).__name__
    return {"refused": refused, **_login_then_validate(_server({"AUTH_JWT_SIGNING_SECRET": secret}), user)}


def probe_new_secret_name_signs_tokens():
    return _login_then_validate(_server({"AUTH_JWT_SIGNING_SECRET": "key-2"}), "bob")


def probe_tokens_signed_with_a_previous_secret_stay_valid():
    server = _server({"AUTH_JWT_SIGNING_SECRET": "key-2", "AUTH_JWT_PREVIOUS_SECRET": "key-0,key-1"})
    return server.validate(TokenService("key-1").issue("carol"))


def probe_forged_token_is_rejected():
    server = _server({"AUTH_JWT_SIGNING_SECRET": "key-2", "AUTH_JWT_PREVIOUS_SECRET": "key-1"})
    return server.validate(TokenService("attacker").issue("mallory"))


def probe_expired_token_is_rejected():
    now = [5000.0]
    token = TokenService("key-2", ttl_seconds=30, clock=lambda: now[0]).issue("dave")
    now[0] += 31
    server = _server({"AUTH_JWT_SIGNING_SECRET": "key-2"})
    server.tokens.clock = lambda: now[0]
    return server.validate(token)
