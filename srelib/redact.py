"""Keeping secrets out of what srelib writes to disk (``run.json``).

:func:`redact` walks a config (dicts, lists, strings) and replaces, with ``<redacted>``:

* the value of any key named like a secret (``api_key``, ``token``, ``hf_token``,
  ``password``, ``client_secret``...; not ``max_tokens``);
* ``name=value`` and ``name: value`` pairs inside text with such a name, as a policy's
  description spells a ``functools.partial``'s keywords (``api_key='...'``);
* values that look like keys whatever they are called: known prefixes (``sk-``, ``hf_``,
  ``ghp_``, ``AKIA``, ``xoxb-``, ``Bearer ...``) and long random-looking tokens.

:func:`scrub_secrets` removes the secrets srelib knows (those :func:`remember_secret` was given,
secret-named values :func:`redact` met, and secret-named environment variables) in the forms an
endpoint may echo them: in any case, URL-encoded, base64 (standard or URL-safe, at any byte
offset, as inside ``Basic`` credentials) and hex. :func:`redact_text` applies it, and the run
store applies it to every episode before writing it.
"""

from __future__ import annotations

import base64
import math
import os
import re
from collections import Counter
from urllib.parse import quote, quote_plus

from srelib.env.support.memo import byte_lru, deep_size

REDACTED = "<redacted>"
_WORDS = (r"api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret"
          r"|secret|token|password|passwd|pwd|credentials?|authorization|auth|bearer|cookie"
          r"|session[_-]?key")
_SECRET_NAME = re.compile(rf"(?i)(?:^|[_\-.])(?:{_WORDS})$|^key$")
_NAMED_VALUE = re.compile(
    rf"(?i)\b((?:\w*[_\-])?(?:{_WORDS}))(\s*[=:]\s*)(?:'[^']*'|\"[^\"]*\"|[^\s,)}}\]]+)")
_PREFIXED = re.compile(r"(?i)\bbearer\s+\S+|\b(?:sk|rk|pk)[-_][A-Za-z0-9_\-]{8,}"
                       r"|\b(?:hf_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abpr]-|AIza)[A-Za-z0-9_\-]{8,}"
                       r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{20,}")
MIN_SECRET_CHARS = 8  # shorter values are not scrubbed: they would match ordinary text
_KNOWN: set[str] = set()


def is_secret_name(name: object) -> bool:
    """Whether a key or argument name says its value is a secret (``hf_token``: yes;
    ``max_tokens``: no)."""
    return isinstance(name, str) and bool(_SECRET_NAME.search(name))


def looks_random(token: str) -> bool:
    """A token of 20+ characters with letters and digits whose characters are nearly all
    distinct: what generated keys look like (words, names and hex shas do not)."""
    if len(token) < 20 or not re.search(r"\d", token) or not re.search(r"[A-Za-z]", token):
        return False
    counts = Counter(token).values()
    entropy = -sum(c / len(token) * math.log2(c / len(token)) for c in counts)
    return entropy >= 0.9 * math.log2(min(len(token), 64))


def remember_secret(value: object) -> None:
    """Scrub ``value`` (a key or token this process holds) from everything written from now on."""
    if isinstance(value, str) and len(value) >= MIN_SECRET_CHARS:
        _KNOWN.add(value)


def _base64_cores(data: bytes) -> list[str]:
    """The base64 text ``data`` always encodes to, whatever bytes surround it: at each offset
    (0-2) into a 3-byte group, the characters that carry its bits only."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode().rstrip("=")
        core = encoded[(8 * offset + 5) // 6:(8 * (offset + len(data))) // 6]
        cores += [core, core.translate(str.maketrans("+/", "-_"))]
    return cores


def _utf8(text: str) -> bytes:
    """``text``'s bytes: an environment value's undecodable bytes as they were (surrogateescape),
    any other lone surrogate as UTF-8 would carry it (never an encoding error)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


@byte_lru(1 << 20, size=lambda key, pattern: deep_size((key, pattern, getattr(pattern, "pattern", None))))
def _secrets_pattern(secrets: frozenset[str]) -> re.Pattern | None:
    forms = set()
    for secret in secrets:
        for variant in {secret, secret.lower(), secret.upper()}:
            data = _utf8(variant)
            forms |= {variant, quote(data, safe=""), quote_plus(data), data.hex(), *_base64_cores(data)}
    forms = sorted((f for f in forms if len(f) >= MIN_SECRET_CHARS), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, forms)), re.I) if forms else None


def scrub_secrets(text: str) -> str:
    """``text`` without the known secrets, in any case and the encodings of the module doc."""
    known = _KNOWN | {v for k, v in os.environ.items()
                      if is_secret_name(k) and k != "PWD" and len(v) >= MIN_SECRET_CHARS}
    pattern = _secrets_pattern(frozenset(known)) if known else None
    return pattern.sub(REDACTED, text) if pattern else text


def redact_text(text: str) -> str:
    """``text`` with known secrets, secret-named values, prefixed keys and random-looking
    tokens replaced."""
    text = _PREFIXED.sub(REDACTED, scrub_secrets(text))
    text = _NAMED_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _TOKEN.sub(lambda m: REDACTED if looks_random(m.group()) else m.group(), text)


def redact(value: object, name: object = None) -> object:
    """A copy of ``value`` (dicts, lists, tuples, strings, scalars) with its secrets redacted."""
    if is_secret_name(name) and value not in (None, "", False):
        remember_secret(value)
        return REDACTED
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
