"""Checks for auth.config and token rotation, run by the grader on the probes' observations."""


def _signs_and_validates(seen, user):
    assert seen.raised is None, seen.message
    assert seen.value["login_status"] == 200
    assert seen.value["validated"]["status"] == 200
    assert seen.value["validated"]["claims"]["sub"] == user


def _draw_login(rng):
    """A signing secret and a user, drawn for one grading."""
    return f"key-{rng.getrandbits(64):x}", f"user-{rng.getrandbits(40):x}"



def test_production_secret_name_still_signs_tokens(seen, rng):
    _, user = _draw_login(rng)
    _signs_and_validates(seen, user)


def _draw_startup(rng):
    """A signing secret and a user, drawn for one grading."""
    return f"key-{rng.getrandbits(64):x}", f"user-{rng.getrandbits(40):x}"



def test_missing_secret_stops_the_service_at_startup(seen, rng):
    _, user = _draw_startup(rng)
    assert seen.value["refused"] == "ConfigError", "load_config accepted a config without a signing secret"
    _signs_and_validates(seen, user)


def test_new_secret_name_signs_tokens(seen):
    _signs_and_validates(seen, "bob")


def test_tokens_signed_with_a_previous_secret_stay_valid(seen):
    assert seen.value["status"] == 200 and seen.value["claims"]["sub"] == "carol"


def test_forged_token_is_rejected(seen):
    assert seen.raised is None and seen.value["status"] == 401


def test_expired_token_is_rejected(seen):
    assert seen.raised is None and seen.value["status"] == 401
