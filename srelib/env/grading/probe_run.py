"""Run a task's hidden-test probes against a repository in a fresh sandbox: the observing step of
patch grading (:mod:`srelib.env.grading.pipeline` describes the whole, and what a probe may do).

The repository's files and the probes travel to the runner (``sandbox_runner.py``) on stdin,
with a nonce; observations come back on its stdout, each line tagged with that nonce, the first
saying it has read its input. The sandbox is a spare one started ahead (:mod:`srelib.env.grading.sandbox.spare`),
used once (one that ended before it read its input, killed from outside, is replaced once by
one started then, within the same timeout). It waits with the runner's own imports done and
the standard modules common to the catalogue's repositories (:func:`common_modules`) imported; once it
has its input, it imports what else the repository needs, before it starts a child per probe
file. A sandbox started on demand imports only what its repository needs.
"""

from __future__ import annotations

import ast
import functools
import json
import secrets
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Mapping

from srelib.env.grading.sandbox import spare
from srelib.env.tasks.lookup import list_repos, load_repo
from srelib.env.grading.errors import GradingError, from_os_error
from srelib.env.grading.sandbox.isolate import MissingTool, prepare, python
from srelib.env.grading.sandbox.process import SandboxResult, Started
from srelib.env.grading.sandbox.seccomp import SeccompUnavailable
from srelib.env.grading.verdicts.observe import PER_TEST_S, program
from srelib.env.grading.verdicts.rules import Observation, collect
from srelib.env.support.ast_parse import parse as parse_python

RECEIVED = json.dumps({"received": True})  # the runner's first record: it has read its input
_RUNNER = Path(__file__).parent / "sandbox" / "probe_runner.py"


def run_probes(files: Mapping[str, str | bytes], tests: dict[str, str], timeout_s: float,
               level: str, seed: int, preload: tuple[str, ...] = ()
               ) -> tuple[dict[str, Observation], bool]:
    """Run the probe files ``tests`` ({name: source}) against the repository ``files`` in a
    sandbox at ``level``, drawing their inputs from ``seed``: ``({test id: Observation},
    timed_out)``. ``preload``: standard modules to import before the probes (:func:`preload_of`).
    The sandbox applies the limits and the uid drop."""
    nonce = secrets.token_hex(16)
    config = {"files": {path: _latin1(text) for path, text in files.items()}, "probes": tests,
              "expected": {name: sorted(_probe_ids(name, source)) for name, source in tests.items()},
              "preload": preload, "limits": {}, "uid": None, "per_test_s": PER_TEST_S, "seed": seed}
    payload = (nonce + "\n" + json.dumps(config) + "\n").encode()
    deadline = time.monotonic() + timeout_s
    launch = functools.partial(_launched, level, timeout_s)
    ahead = functools.partial(_start_runner, level, timeout_s, common_modules())
    run = spare.take((level, timeout_s), ahead, launch).finish(payload, timeout_s)
    if not run.timed_out and RECEIVED not in _channel(run.stdout, nonce):
        # It ended before it read its input (a spare killed from outside before or as it was
        # taken): no patched code ran, so once more, in a sandbox started now, in the time left
        # once it has started.
        run = launch().finish(payload, max(0.0, deadline - time.monotonic()))
    channel = _channel(run.stdout, nonce)
    if RECEIVED not in channel:  # no patched code ran: the grader failed, not the patch
        raise _unstarted(run)
    return collect(channel), run.timed_out


def _launched(level: str, timeout_s: float) -> Started:
    """:func:`_start_runner` now; a launch that fails raises :class:`GradingError`."""
    try:
        return _start_runner(level, timeout_s)
    except OSError as exc:
        raise from_os_error(exc, "starting the sandbox") from exc
    except (MissingTool, SeccompUnavailable) as exc:
        raise GradingError("missing_tool", str(exc)) from exc


def _unstarted(run: SandboxResult) -> GradingError:
    """The error for a sandbox whose runner never read its input."""
    said = run.stderr.decode(errors="replace").strip()[-300:]
    if run.timed_out:
        return GradingError("machinery_timeout", "the sandbox did not start the tests within "
                            f"the grading's time{': ' + said if said else ''}")
    return GradingError("sandbox_killed", f"the sandbox ended (status {run.returncode}) before "
                        f"the tests started{': ' + said if said else ''}")


def _start_runner(level: str, timeout_s: float, ahead: tuple[str, ...] = ()) -> Started:
    """The runner in a sandbox at ``level``, importing the standard modules ``ahead`` while it
    waits for its input."""
    return prepare([python(), "-I", "-S", "-B", "-c", _runner_source(), *ahead],
                   timeout_s=timeout_s, level=level)


@functools.lru_cache(maxsize=1)
def common_modules() -> tuple[str, ...]:
    """The standard modules that at least a fifth of the catalogue's repositories, and at
    least two, need (:func:`preload_of`): a spare runner imports them while it waits,
    whichever repository it will get. (All that any repository needs cost a third more CPU a
    grading, back to back, for no lower median.)"""
    repos = list_repos()
    counts = Counter(module for name in repos for module in preload_of(name))
    return tuple(sorted(m for m, n in counts.items() if n >= max(2, len(repos) / 5)))


@functools.lru_cache(maxsize=1)
def _runner_source() -> str:
    return program(_RUNNER.read_text(encoding="utf-8"))


def _latin1(text: str | bytes) -> str:
    """Bytes as text that JSON carries and the runner turns back into the same bytes."""
    return (text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")).decode("latin-1")


@functools.lru_cache(maxsize=4096)
def _probe_ids(name: str, source: str) -> frozenset[str]:
    """The test ids of the probes ``source`` defines at its top level (none if it does not parse)."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset(f"{name}::test_{node.name[len('probe_'):]}" for node in tree.body
                     if isinstance(node, ast.FunctionDef) and node.name.startswith("probe_"))


@functools.lru_cache(maxsize=64)
def preload_of(repo_name: str) -> tuple[str, ...]:
    """The standard modules ``repo_name``'s files and probes import, less any of the
    repository's own top-level modules would shadow: the runner imports them once, before it
    starts a child per probe file."""
    repo = load_repo(repo_name)
    own = {path.split("/", 1)[0].removesuffix(".py") for path in repo.tree}
    sources = [text for path, text in repo.tree.items() if path.endswith(".py")]
    return tuple(sorted({name for source in [*sources, *repo.hidden_tests.values()]
                         for name in _imports(source) if name.split(".", 1)[0] not in own}))


def _imports(source: str) -> set[str]:
    """Standard modules ``source`` imports by absolute name (none if it does not parse)."""
    try:
        nodes = list(ast.walk(parse_python(source)))
    except (SyntaxError, ValueError):
        return set()
    names = [alias.name for node in nodes if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in nodes
              if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module]
    return {n for n in names if n.split(".", 1)[0] in sys.stdlib_module_names}


def _channel(raw: bytes, nonce: str) -> list[str]:
    """The payloads of the runner's channel: its lines tagged with ``nonce``."""
    tagged = (line.partition(" ") for line in raw.decode(errors="replace").splitlines())
    return [payload for tag, _, payload in tagged if tag == nonce]
