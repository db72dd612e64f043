"""Hidden tests for auth.config and token rotation (cascading_failure)."""

from auth.config import ConfigError, load_config
from auth.server import AuthServer
from auth.token import TokenService


def _server(environ):
    return AuthServer(load_config(environ))


def test_production_secret_name_still_signs_tokens():
    server = _server({"AUTH_JWT_SECRET": "prod-key", "AUTH_ENV": "prod"})
    login = server.login("alice")
    assert login["status"] == 200
    assert server.validate(login["token"])["claims"]["sub"] == "alice"


def test_missing_secret_stops_the_service_at_startup():
    try:
        load_config({"AUTH_ENV": "prod"})
    except ConfigError:
        return
    raise AssertionError("load_config accepted a config without a signing secret")


def test_new_secret_name_signs_tokens():
    server = _server({"AUTH_JWT_SIGNING_SECRET": "key-2"})
    login = server.login("bob")
    assert login["status"] == 200 and server.validate(login["token"])["status"] == 200


def test_tokens_signed_with_a_previous_secret_stay_valid():
    server = _server({"AUTH_JWT_SIGNING_SECRET": "key-2", "AUTH_JWT_PREVIOUS_SECRET": "key-0,key-1"})
    old_token = TokenService("key-1").issue("carol")
    assert server.validate(old_token)["claims"]["sub"] == "carol"


def test_forged_token_is_rejected():
    server = _server({"AUTH_JWT_SIGNING_SECRET": "key-2", "AUTH_JWT_PREVIOUS_SECRET": "key-1"})
    forged = TokenService("attacker").issue("mallory")
    assert server.validate(forged)["status"] == 401


def test_expired_token_is_rejected():
    now = [5000.0]
    service = TokenService("key-2", ttl_seconds=30, clock=lambda: now[0])
    token = service.issue("dave")
    now[0] += 31
    server = _server({"AUTH_JWT_SIGNING_SECRET": "key-2"})
    server.tokens.clock = lambda: now[0]
    assert server.validate(token)["status"] == 401
