"""Secrets never reach run.json: names that say secret, and values that look like keys."""

import pytest

from srelib.redact import (REDACTED, is_secret_name, looks_random, redact, redact_text, remember_secret,
                           scrub_secrets)

KEYS = ["sk-proj-Zx81LmQ0aP9vT4r2Yc6Wb3Nd", "sk-ant-api03-AbC123dEf456GhI789", "hf_aB3dE5fG7hJ9kL1mN2pQ4rS6",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "AKIAIOSFODNN7EXAMPLE", "xoxb-2048-aB3dE5fG7hJ9",
        "pQcJalSeBYxqXIgqRD-WxyEVvBWduc4z", "Zx81LmQ0aP9vT4r2Yc6Wb3NdQ"]
KEPT = ["a3f7c91b8e2d44c5a1f77d2b9c11e1f4a02f8c9", "srelib.policies.scripted.heuristic.HeuristicPhase1Policy",
        "HeuristicPhase1Policy_v2_long", "ThisIsAVeryLongCamelCaseName2024", "max_tokens=600",
        "Linux-6.1.0-28-amd64-x86_64-with-glibc2.36", "heldout_confidence_ordering",
        "http://127.0.0.1:8000/v1", "google/gemma-3-270m-it"]


@pytest.mark.parametrize("key", KEYS)
def test_values_that_look_like_keys_are_redacted_wherever_they_are(key):
    assert redact_text(f"Policy(model='m', note='{key}')") == f"Policy(model='m', note='{REDACTED}')"
    assert redact({"anything": [key]}) == {"anything": [REDACTED]}


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_values_are_kept(text):
    assert redact_text(text) == text and not looks_random(text)


def test_secret_names_redact_their_values_in_dicts_and_in_descriptions():
    assert [n for n in ("api_key", "OPENAI_API_KEY", "hf_token", "token", "password", "client_secret",
                        "max_tokens", "tokens", "n_commits", "author", "keyword") if is_secret_name(n)] == \
        ["api_key", "OPENAI_API_KEY", "hf_token", "token", "password", "client_secret"]
    config = {"api_key": "plain-words", "max_tokens": 600, "nested": [{"HF_TOKEN": "x"}],
              "policy": "partial(OpenAIChatPolicy, 'm', api_key='hunter2', password=\"a b\", max_tokens=5)"}
    assert redact(config) == {
        "api_key": REDACTED, "max_tokens": 600, "nested": [{"HF_TOKEN": REDACTED}],
        "policy": f"partial(OpenAIChatPolicy, 'm', api_key={REDACTED}, password={REDACTED}, max_tokens=5)"}
    assert redact_text("Authorization: Bearer abc.def") == f"Authorization: {REDACTED}"


ECHOED = "Zx81LmQ0aP9vT4r2/Yc6Wb+3Nd"


def _echoes(key: str) -> list[str]:
    """The forms an endpoint may quote a key back in."""
    import base64
    from urllib.parse import quote, quote_plus

    forms = [key, key.lower(), key.upper(), key.swapcase(), quote(key, safe=""), quote(key, safe="").lower(),
             quote_plus(key), key.encode().hex(), key.encode().hex().upper(),
             base64.urlsafe_b64encode(key.encode()).decode()]
    forms += [base64.b64encode(f"{prefix}:{key}".encode()).decode() for prefix in ("u", "us", "use")]
    return forms


def test_a_known_key_is_scrubbed_in_any_case_and_common_encoding(monkeypatch):
    import srelib.redact as redact_module

    monkeypatch.setattr(redact_module, "_KNOWN", set())
    for form in _echoes(ECHOED):
        assert scrub_secrets(f"echo: {form}!") == f"echo: {form}!", "unknown keys stay"
    remember_secret(ECHOED)
    for form in _echoes(ECHOED):
        scrubbed = scrub_secrets(f"echo: {form}!")
        assert REDACTED in scrubbed and ECHOED.lower()[:12] not in scrubbed.lower(), form
    assert scrub_secrets("nothing secret here") == "nothing secret here"


def test_keys_named_in_a_config_or_the_environment_are_known(monkeypatch, tmp_path):
    import srelib.redact as redact_module

    monkeypatch.setattr(redact_module, "_KNOWN", set())
    monkeypatch.setenv("HF_TOKEN", "Qm9vYmF6ZXIxMjM0NTY3")
    monkeypatch.setenv("PWD", str(tmp_path))  # a secret-sounding name that holds no secret
    assert redact({"api_key": ECHOED}) == {"api_key": REDACTED}
    text = f"{ECHOED.upper()} and {'Qm9vYmF6ZXIxMjM0NTY3'.lower()} in {tmp_path}"
    assert scrub_secrets(text) == f"{REDACTED} and {REDACTED} in {tmp_path}"


def test_secrets_that_are_not_valid_text_are_scrubbed_not_raised(monkeypatch):
    """A secret-named variable holding bytes that are not UTF-8 (Python shows them as lone
    surrogates), or a remembered key with a lone surrogate, must not stop results being written."""
    raw = b"abc\xffdefghijklmnop0123"
    monkeypatch.setenv("SRELIB_TEST_API_KEY", raw.decode("utf-8", "surrogateescape"))
    assert scrub_secrets(f"key={raw.decode('utf-8', 'surrogateescape')}; hex={raw.hex()}") == \
        f"key={REDACTED}; hex={REDACTED}"
    remember_secret("tok\ud800-Zx81LmQ0aP9vT4r2")
    assert scrub_secrets("sent tok\ud800-Zx81LmQ0aP9vT4r2") == f"sent {REDACTED}"
