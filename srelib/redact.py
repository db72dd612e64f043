"""Keeping secrets out of what srelib writes to disk (``run.json``).

:func:`redact` walks a config (dicts, lists, strings) and replaces, with ``<redacted>``:

* the value of any key named like a secret (``api_key``, ``token``, ``hf_token``,
  ``password``, ``client_secret``...; not ``max_tokens``);
* ``name=value`` and ``name: value`` pairs inside text with such a name, as a policy's
  description spells a ``functools.partial``'s keywords (``api_key='...'``);
* values that look like keys whatever they are called: known prefixes (``sk-``, ``hf_``,
  ``ghp_``, ``AKIA``, ``xoxb-``, ``Bearer ...``) and long random-looking tokens.
"""

from __future__ import annotations

import math
import re
from collections import Counter

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


def redact_text(text: str) -> str:
    """``text`` with secret-named values, prefixed keys and random-looking tokens replaced."""
    text = _PREFIXED.sub(REDACTED, text)
    text = _NAMED_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _TOKEN.sub(lambda m: REDACTED if looks_random(m.group()) else m.group(), text)


def redact(value: object, name: object = None) -> object:
    """A copy of ``value`` (dicts, lists, tuples, strings, scalars) with its secrets redacted."""
    if is_secret_name(name) and value not in (None, "", False):
        return REDACTED
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
