"""Hidden-test verdicts, decided in the grader's process from the probes' observations.

A repository's hidden tests come in two halves (layout in docs/CONTRACTS.md):

* ``hidden_tests/probes/<file>.py``: ``probe_<name>()`` functions. Only these run next to the
  patched code (``sandbox_runner.py``, observing as :mod:`srelib.env.grading.verdicts.observe` does); each
  returns a JSON-serialisable observation.
* ``hidden_tests/checks/<file>.py``: ``test_<name>(seen)`` functions that judge the
  :class:`Observation` of ``probe_<name>`` and raise (usually ``AssertionError``) when it is
  wrong. They run here, in the grader; the patched process never sees them or their expected
  values.

A probe may take one argument, ``rng``: the runner passes ``random.Random("<seed>:<test id>")``
for a seed the grader draws afresh at every grading (:func:`draw_seed`), and the check then
takes ``(seen, rng)`` and gets a fresh generator seeded the same way, so it can redraw the same
inputs in the same order and compute what they must give. Observations copied from an earlier
grading (a patch that replays what fixed code reported) then fail. What the patched code can do
with the seed is bounded too: it may read it (or the generator) from the runner's frames, or
replace ``random.Random`` in the runner, but that changes only the inputs the probe uses, never
those the check redraws here; to report right answers for the grading's own inputs it has to
compute them, i.e. carry a correct implementation, which the bug-site guard
(:mod:`srelib.env.grading.site_guard`) refuses unless the bug's own function changed as well.

The test id ``<file>::test_<name>`` names the pair. A test passes when its probe reported
exactly one well-formed observation and its check returns without raising. The runner's lines
are decoded as plain JSON (:func:`decode_record`), bounded in size and nesting, so a hijacked
child can report wrong observations but never objects, and never a verdict.

The checks are never copied next to the patched code. Whether the child could read them from
srelib's installed package depends on the sandbox (``grade_patch``'s ``isolation``): ``bwrap``
hides the package; at weaker levels a child that escapes the runner's audit hook (a direct
``_posixsubprocess.fork_exec`` does on Python 3.11) may read any world-readable file.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Callable

from srelib.env.support.memo import byte_lru, deep_size
from srelib.env.grading.verdicts.observe import RECORD_CHARS, probe_rng
from srelib.env.phase2.repos import Repo
from srelib.env.types import Resolution

MAX_DEPTH = 24
_JSON_LEAVES = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class Observation:
    """What one probe did: its return ``value`` (plain JSON), the ``raised`` exception's type
    name (None when it returned) and ``message``, and the text it ``printed``."""

    value: object = None
    raised: str | None = None
    message: str = ""
    printed: str = ""


def _plain(value: object, depth: int = 0) -> bool:
    """Is ``value`` plain JSON no deeper than MAX_DEPTH?"""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    return isinstance(value, _JSON_LEAVES)


def decode_record(payload: str) -> tuple[str, Observation] | None:
    """``(test id, Observation)`` from one runner line's JSON, or None if it is not a
    well-formed, bounded observation record."""
    if not isinstance(payload, str) or len(payload) > RECORD_CHARS:
        return None
    try:
        record = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or not _plain(record):
        return None
    raised, printed = record.get("raised"), record.get("printed", "")
    if raised is not None and not (isinstance(raised, dict) and isinstance(raised.get("type"), str)
                                   and isinstance(raised.get("message", ""), str)):
        return None
    if not isinstance(printed, str):
        return None
    return record["id"], Observation(
        value=record.get("value"), raised=None if raised is None else raised["type"],
        message="" if raised is None else raised.get("message", ""), printed=printed)


def collect(lines: list[str]) -> dict[str, Observation]:
    """The observations in the runner's records (payloads after the nonce). An id reported
    more than once is dropped: a probe runs once, so a second report is a forgery."""
    seen: dict[str, Observation | None] = {}
    for payload in lines:
        decoded = decode_record(payload)
        if decoded is None:
            continue
        test_id, observation = decoded
        seen[test_id] = None if test_id in seen else observation
    return {k: v for k, v in seen.items() if v is not None}


def _checks(repo: Repo, file: str) -> dict[str, Callable]:
    """The ``test_*`` functions of ``repo``'s ``checks/<file>`` (compiled once)."""
    if file not in repo.checks:
        raise ValueError(f"repo {repo.name!r} has no checks file {file!r}; valid: {sorted(repo.checks)}")
    return checks_in(repo.name, file, repo.checks[file])


@byte_lru(4 << 20, size=lambda key, checks: deep_size((key, checks, [f.__code__ for f in checks.values()])))
def checks_in(owner: str, file: str, source: str) -> dict[str, Callable]:
    """The checks a checks file defines, compiled once per source.

    Args:
        owner: Whose file it is (a repository's name), for the module and file names.
        file: The checks file's name (``test_x.py``).
        source: Its source.

    Returns:
        ``{name: check}`` for its ``test_*`` callables.
    """
    namespace: dict = {"__name__": f"srelib_checks.{owner}.{file[:-3]}"}
    exec(compile(source, f"<{owner} hidden_tests/checks/{file}>", "exec"), namespace)
    return {n: f for n, f in namespace.items() if n.startswith("test_") and callable(f)}


def passes(judge: Callable, test_id: str, observation: Observation | None, seed: int = 0) -> bool:
    """The verdict rule, for grading and the generator's test derivation alike.

    Args:
        judge: The check ``test_id`` names (from :func:`checks_in`).
        test_id: ``<file>::test_<name>``.
        observation: What its probe did; None when it reported nothing.
        seed: The seed the probe drew its inputs from; a check that takes two arguments gets
            :func:`srelib.env.grading.verdicts.observe.probe_rng` of it.

    Returns:
        True when there is an observation and the check returns without raising an Exception.
    """
    if observation is None:
        return False
    args = (probe_rng(seed, test_id),) if judge.__code__.co_argcount > 1 else ()
    try:
        judge(observation, *args)
    except Exception:
        return False
    return True


def draw_seed() -> int:
    """A fresh seed for one grading's drawn probe inputs, unknowable before the probes run."""
    return secrets.randbits(63)


def check(repo: Repo, test_id: str, observation: Observation | None, seed: int = 0) -> bool:
    """Does ``observation`` pass the check ``test_id``? A missing observation fails. A check
    that takes two arguments also gets the generator its probe drew inputs from (``seed``)."""
    file, _, name = test_id.partition("::")
    checks = _checks(repo, file)
    if name not in checks:
        raise ValueError(f"repo {repo.name!r} has no check {test_id!r}; valid: "
                         f"{[f'{file}::{n}' for n in sorted(checks)]}")
    return passes(checks[name], test_id, observation, seed)


def verdicts(repo: Repo, test_ids: list[str], observations: dict[str, Observation],
             seed: int = 0) -> dict[str, bool]:
    """``{test id: passed}`` for ``repo``'s ``test_ids`` given the probes' observations under
    ``seed``."""
    return {t: check(repo, t, observations.get(t), seed) for t in test_ids}


def resolution(fail_to_pass: dict[str, bool], pass_to_pass: dict[str, bool]) -> Resolution:
    """SWE-bench's ``resolved``: ``"full"`` when every FAIL_TO_PASS and PASS_TO_PASS test
    passes, ``"partial"`` when some but not all FAIL_TO_PASS pass and every PASS_TO_PASS
    passes, else ``"no"``."""
    if not all(pass_to_pass.values()):
        return "no"
    if all(fail_to_pass.values()):
        return "full"
    return "partial" if any(fail_to_pass.values()) else "no"


def rates(fail_to_pass: dict[str, bool], pass_to_pass: dict[str, bool]) -> dict[str, float | None]:
    """SWE-bench's partial measures: ``fail_to_pass_rate``, the fraction of FAIL_TO_PASS tests
    that pass, and ``pass_to_pass_rate``, the fraction of PASS_TO_PASS tests that still pass
    (None where there are no such tests)."""
    def share(tests: dict[str, bool]) -> float | None:
        return round(sum(tests.values()) / len(tests), 4) if tests else None
    return {"fail_to_pass_rate": share(fail_to_pass), "pass_to_pass_rate": share(pass_to_pass)}
