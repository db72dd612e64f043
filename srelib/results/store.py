"""Episode records and the run directory that stores them.

A run directory holds ``run.json`` (the run's configuration, package versions and git revision)
and ``episodes.jsonl`` (one :class:`Episode` per line, trajectory included, appended and flushed
as each episode finishes). Readers skip lines that are not an Episode (a write cut short by a
kill, a damaged disk) with a :class:`CorruptLinesWarning` that counts them; a resumed
:class:`RunStore` rewrites the file without them. Writers take a lock on
``episodes.jsonl.lock`` (``fcntl.flock``), so two processes filling one run directory never
store an episode twice. ``run.json`` never holds secrets, and episodes never hold a key srelib
knows of, in any case or common encoding: see :mod:`srelib.redact`.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Iterator, TypedDict

from srelib.env.actions import PARSE_ERROR
from srelib.env.grading.score import WEIGHTS
from srelib.env.support.json_copy import valid_text
from srelib.env.types import ScoreBreakdown
from srelib.results.localisation import LOCALISATION_COLUMNS, PARTIAL_REPAIR, partial_repair
from srelib.redact import scrub_secrets

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # JSON's escape of a surrogate

try:
    import fcntl
except ImportError:  # Windows: appends are not locked
    fcntl = None

RUN_FILE = "run.json"
EPISODES_FILE = "episodes.jsonl"
LOCK_FILE = EPISODES_FILE + ".lock"
#: The columns that identify an episode; resume and de-duplication key on them.
KEY_COLUMNS = ("policy", "task", "pool", "mode", "seed")
#: Score components in the order of ``grading.WEIGHTS`` (see docs/CONTRACTS.md, Scores).
COMPONENTS: tuple[str, ...] = tuple(WEIGHTS)
#: Columns of the frames that :func:`srelib.load_run` and :func:`srelib.evaluate` return.
COLUMNS = (*KEY_COLUMNS, "final", *COMPONENTS, "r_cross", "resolved", *PARTIAL_REPAIR, "p1_steps",
           "p2_steps", "terminated", "truncated", "ended_by", "parse_failures", "tokens", "latency_s",
           "wall_s", "error", "oracle", "grading_error",
           *LOCALISATION_COLUMNS)  # analysis columns (srelib.results.localisation), never in the reward
#: Episode fields that no replay can check: what the policy cost, the text of its failure, and
#: whether it was handed the answer. ``run.json`` lists them under ``unverifiable``.
UNVERIFIABLE = ("tokens", "latency_s", "wall_s", "error", "oracle")


class RunPlan(TypedDict):
    """The planned grid of a run: its episode keys (``[policy, task id, pool, mode, seed]``)
    and :func:`plan_digest` of them."""

    episodes: list[list[Any]]
    digest: str


class RunManifest(TypedDict, total=False):
    """``run.json``, as :meth:`RunStore.write_config` writes it (a file from elsewhere may lack
    any key): the run's config (secrets redacted), package versions, git revision, the
    sandbox's isolation level and mode and whether its verdicts hold, when it was created and
    each start, the episode fields no replay checks, the score weights it was graded with, and
    the planned grid."""

    config: Any  # the config dict as srelib.redact returns it
    versions: dict[str, str]
    git: dict[str, Any] | None
    isolation: str
    sandbox: str
    verified: bool
    created: str
    started: list[str]
    unverifiable: list[str]
    weights: dict[str, float]
    plan: RunPlan


_VERSIONED = ("srelib", "numpy", "pandas", "matplotlib", "tqdm", "openai", "transformers", "torch")


@dataclass
class Episode:
    """One finished episode: what happened (``steps``), how it scored, and what it cost.

    ``steps`` is the environment's trajectory (docs/CONTRACTS.md), including the handoff
    record; ``score`` is the ``score_trajectory`` breakdown; ``r_cross`` is None unless a
    null-handoff repair value was given. ``tokens`` and ``latency_s`` are None for policies that
    do not record usage. ``error`` holds the traceback of a policy or environment exception
    that ended the episode early (``ended_by`` ``"policy_error"`` or ``"env_error"``).
    ``task`` is the task's opaque id (:mod:`srelib.env.tasks.ids`); ``oracle`` is True when the
    policy was handed the answer (:mod:`srelib.policies.oracle`). ``grading_error`` is set
    (``{"kind", "message", "attempts"}``, :mod:`srelib.env.grading.errors`) when the grader
    could not grade the episode: it has no score, and resuming the run plays it again.
    """

    policy: str
    task: str
    pool: str | None
    mode: str
    seed: int
    steps: list[dict] = field(default_factory=list)
    score: ScoreBreakdown | None = None
    r_cross: float | None = None
    parse_failures: int = 0
    tokens: int | None = None
    latency_s: float | None = None
    terminated: bool = False
    truncated: bool = False
    ended_by: str | None = None
    wall_s: float = 0.0
    error: str | None = None
    oracle: bool = False
    grading_error: dict | None = None

    @property
    def key(self) -> tuple:
        """``(policy, task, pool, mode, seed)``: what resume and de-duplication compare."""
        return tuple(getattr(self, k) for k in KEY_COLUMNS)

    @property
    def public_task(self) -> str:
        """The task as tables show it: a classic task's name, else its opaque id."""
        from srelib.env.tasks.ids import public_name

        try:
            return public_name(self.task)
        except ValueError:  # an episode of a task this srelib does not know
            return self.task

    @property
    def final(self) -> float | None:
        return None if self.score is None else self.score.get("final")

    @property
    def handoff(self) -> dict | None:
        """The belief handed to phase 2 (the agent's, or the oracle's in pool B), if any."""
        from srelib.env.records import handoff

        return handoff(self.steps)[0]

    @property
    def phase_steps(self) -> tuple[int, int]:
        """Steps taken in phase 1 and phase 2 (the pool-B automatic handoff is not a step)."""
        from srelib.env.records import phase_steps

        counted = (self.score or {}).get("steps")
        if counted:
            return int(counted["p1"]), int(counted["p2"])
        return phase_steps(self.steps)

    def __repr__(self) -> str:
        final = "-" if self.final is None else f"{self.final:.3f}"
        error = f", error={self.error[:60]!r}" if self.error else ""
        return (f"Episode(task={self.task}, pool={self.pool}, seed={self.seed}, "
                f"policy={self.policy}, final={final}, steps={len(self.steps)}{error})")

    def localisation(self) -> dict[str, Any]:
        """The episode's localisation columns (:mod:`srelib.results.localisation`; analysis only).

        Returns:
            ``{column: value}`` for the localisation columns of :data:`COLUMNS`.
        """
        from srelib.results.localisation import localisation

        return localisation(self.task, self.mode, self.steps, self.seed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Episode":
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown Episode fields {sorted(unknown)}; valid: {sorted(names)}")
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> "Episode":
        """The episode a line of ``episodes.jsonl`` (text or its bytes) holds; a lone surrogate
        its JSON escapes (a hand-edited file, a policy's own text) reads as ``?``, so what is
        loaded prints.

        Args:
            text: One line of ``episodes.jsonl``, as text or bytes.

        Returns:
            The episode.
        """
        data = json.loads(text)
        raw = text.decode("latin-1") if isinstance(text, (bytes, bytearray)) else text
        return cls.from_dict(valid_text(data) if _SURROGATE_ESCAPE.search(raw) else data)

    def row(self) -> dict[str, Any]:
        """The episode as one flat row of the results frame (see :data:`COLUMNS`); the task is
        shown by :attr:`public_task`.

        Returns:
            ``{column: value}`` for every column of :data:`COLUMNS`, in that order.
        """
        score = self.score or {}
        p1, p2 = self.phase_steps
        values = {**{k: getattr(self, k) for k in KEY_COLUMNS}, "task": self.public_task,
                  "final": self.final,
                  **{c: score.get(c) for c in COMPONENTS}, "r_cross": self.r_cross,
                  "resolved": (score.get("patch") or {}).get("resolved"),  # full, partial, no
                  **partial_repair(score),  # SWE-bench's partial measures
                  "p1_steps": p1, "p2_steps": p2,
                  "grading_error": None if self.grading_error is None else
                  f"{self.grading_error.get('kind')}: {self.grading_error.get('message')}"}
        located = self.localisation()
        values.update({k: located[k] if k in located else getattr(self, k)
                       for k in COLUMNS if k not in values})
        return {k: values[k] for k in COLUMNS}


def plan_digest(keys: Iterable) -> str:
    """The digest of a planned grid: SHA-256 of its episode keys, sorted, as JSON.

    Args:
        keys: The grid's episode keys (sequences of JSON values).

    Returns:
        The hex digest.
    """
    import hashlib

    rows = sorted(json.dumps(list(k), separators=(",", ":")) for k in keys)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def count_parse_failures(trajectory: list[dict]) -> int:
    """How many steps sent the reserved PARSE_ERROR action (an unreadable model reply).

    Args:
        trajectory: The episode's step records.

    Returns:
        The number of such steps.
    """
    return sum(1 for r in trajectory if (r.get("action") or {}).get("action_type") == PARSE_ERROR)


def frame_from_episodes(episodes) -> "Any":
    """A tidy DataFrame, one row per episode, sorted by the key columns.

    Args:
        episodes: :class:`Episode` objects.

    Returns:
        A pandas DataFrame with the columns :data:`COLUMNS`.
    """
    from srelib.extras import require

    pd = require("pandas", "a results table")

    frame = pd.DataFrame([e.row() for e in episodes], columns=list(COLUMNS))
    frame = frame.astype({"p1_steps": int, "p2_steps": int, "parse_failures": int,
                          "terminated": bool, "truncated": bool, "oracle": bool})
    order = frame.sort_values(list(KEY_COLUMNS), na_position="first", kind="stable").index
    return frame.loc[order].reset_index(drop=True)


class CorruptLinesWarning(UserWarning):
    """Some lines of an ``episodes.jsonl`` are not stored Episodes and were skipped."""


class RunStore:
    """A run directory: ``run.json`` plus an append-only ``episodes.jsonl``.

    ``RunStore(path, resume=True)`` keeps the episodes already stored, rewriting the file
    without corrupt or duplicate lines if it has any; ``resume=False`` starts it afresh.
    Several stores (in several processes) may append to one directory at once: each append
    happens under the directory's lock, after reading what the others have appended.

    Args:
        path: The run directory (created if missing).
        resume: Keep the episodes already stored (True) or start the file afresh.
    """

    def __init__(self, path: str | os.PathLike, *, resume: bool = True):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.episodes_path = self.path / EPISODES_FILE
        self.done: set[tuple] = set()
        self.resumed = resume
        self._read_to = (None, 0)  # (inode, offset) of the file read so far
        with self._locked():
            if not resume:
                self.episodes_path.write_text("")
            else:
                self._rewrite_if_damaged()
            self._catch_up()

    def write_config(self, config: dict[str, Any], plan: Iterable[tuple] | None = None) -> None:
        """Write ``run.json``: the config with secrets redacted, package versions, git revision,
        the isolation level patch grading ran under, the sandbox mode (``"unsafe"``: opted in to a
        weak level) and whether its verdicts are ``verified`` (kept on resume); the planned grid
        (``plan``: episode keys, added to those planned before when resuming) with its digest;
        the episode fields no replay can check (:data:`UNVERIFIABLE`) and srelib's score
        weights. Resuming keeps ``config.registered`` (policy -> srelib registry name) of the
        policies planned before that this call does not name.

        Args:
            config: The run's settings (JSON-ready; secrets are redacted before writing).
            plan: The episode keys this call plans, or None.
        """
        from srelib.env.grading.sandbox.isolate import HOLDING_LEVELS, isolation_level, sandbox_mode
        from srelib.redact import redact

        run_file = self.path / RUN_FILE
        with self._locked():
            previous: RunManifest = json.loads(run_file.read_text()) if run_file.exists() else {}
            now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            record: RunManifest = {"config": redact(json.loads(json.dumps(config, default=str))),
                      "versions": package_versions(), "git": git_revision(),
                      "isolation": isolation_level(), "sandbox": sandbox_mode(),
                      "verified": isolation_level() in HOLDING_LEVELS,
                      "created": previous.get("created", now),
                      "started": [*previous.get("started", []), now],
                      "unverifiable": list(UNVERIFIABLE), "weights": dict(WEIGHTS)}
            planned = [*((previous.get("plan") or {}).get("episodes", []) if self.resumed else []),
                       *([list(key) for key in plan] if plan is not None else [])]
            if planned:
                unique = list({json.dumps(k): k for k in planned}.values())
                record["plan"] = {"episodes": unique, "digest": plan_digest(unique)}
            if self.resumed:
                _keep_registered(previous, record)
            _replace(run_file, json.dumps(record, indent=2, sort_keys=True) + "\n")

    def append(self, episode: Episode) -> bool:
        """Append one episode and flush.

        Args:
            episode: The episode to store.

        Returns:
            True when it was written; False (writing nothing) if it is already stored, by this
            store or by another writer.
        """
        with self._locked():
            self._catch_up()
            if episode.key in self.done:
                return False
            with self.episodes_path.open("ab") as fh:
                fh.write((scrub_secrets(episode.to_json()) + "\n").encode())
                fh.flush()
                self._read_to = (os.fstat(fh.fileno()).st_ino, fh.tell())
            if episode.grading_error is None:  # one the grader could not grade is not done
                self.done.add(episode.key)
        return True

    @contextmanager
    def _locked(self):
        with (self.path / LOCK_FILE).open("a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _catch_up(self) -> None:
        """Read the keys of lines appended since the last read (by anyone); cut off a partial
        last line, which under the lock can only be a write that a kill cut short."""
        if not self.episodes_path.exists():
            self.episodes_path.touch()
        with self.episodes_path.open("r+b") as fh:
            inode, offset = self._read_to
            stat = os.fstat(fh.fileno())
            if stat.st_ino != inode or stat.st_size < offset:
                offset = 0  # a new or rewritten file: read it all
            fh.seek(offset)
            data = fh.read()
            whole = data.rfind(b"\n") + 1
            if whole < len(data):
                fh.truncate(offset + whole)
            for line in data[:whole].split(b"\n"):
                key = _line_key(line, graded_only=True)
                if key is not None:
                    self.done.add(key)
            self._read_to = (stat.st_ino, offset + whole)

    def _rewrite_if_damaged(self) -> None:
        if not self.episodes_path.exists():
            return
        data = self.episodes_path.read_bytes()
        kept, skipped, seen = [], 0, set()
        for line in data.split(b"\n"):
            key = _line_key(line, graded_only=True)  # resuming plays ungraded episodes again
            if key is None:
                skipped += bool(line.strip())
            elif key not in seen:
                seen.add(key)
                kept.append(line + b"\n")
        if skipped or len(kept) != data.count(b"\n"):
            _replace(self.episodes_path, b"".join(kept))


def _keep_registered(previous: RunManifest, record: RunManifest) -> None:
    """Carry the registry names of policies planned by earlier calls into a resumed manifest,
    so their episodes are still re-run (:mod:`srelib.runners.rerun`)."""
    from srelib.results.settings import section

    config = record.get("config")
    before = section(section(previous, "config"), "registered")
    if not isinstance(config, dict) or not before:
        return
    named = set(section(config, "policies"))
    config["registered"] = {**{k: v for k, v in before.items() if k not in named},
                            **section(config, "registered")}


def _line_key(line: bytes, graded_only: bool = False) -> tuple | None:
    """The key of a stored Episode line, or None for a blank or corrupt one (and, with
    ``graded_only``, for one the grader could not grade)."""
    episode = _parse_line(line)
    if episode is None or (graded_only and episode.grading_error is not None):
        return None
    return episode.key


def _parse_line(line: bytes) -> Episode | None:
    if not line.strip():
        return None
    try:
        return Episode.from_json(line.decode("utf-8"))
    except (UnicodeDecodeError, TypeError, ValueError, RecursionError):
        return None


def _replace(path: Path, content: str | bytes) -> None:
    """Write ``path`` whole or not at all (a temporary file renamed over it)."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as fh:
        fh.write(content.encode() if isinstance(content, str) else content)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(temporary, path)


def iter_episodes(path: str | os.PathLike) -> Iterator[Episode]:
    """The episodes stored in a run directory, skipping duplicates and corrupt lines (with a
    :class:`CorruptLinesWarning` that counts them).

    Args:
        path: The run directory.

    Yields:
        Each stored :class:`Episode` once; one whose grading failed only if it was never graded
        since.
    """
    episodes_path = Path(path) / EPISODES_FILE
    if not episodes_path.exists():
        return
    seen, corrupt, ungraded = set(), [], {}
    for number, line in enumerate(episodes_path.read_bytes().split(b"\n"), 1):
        episode = _parse_line(line)
        if episode is None:
            if line.strip():
                corrupt.append(number)
        elif episode.grading_error is not None:  # shown only if never graded since
            ungraded.setdefault(episode.key, episode)
        elif episode.key not in seen:
            seen.add(episode.key)
            yield episode
    yield from (e for key, e in ungraded.items() if key not in seen)
    if corrupt:
        shown = ", ".join(map(str, corrupt[:5])) + (", ..." if len(corrupt) > 5 else "")
        warnings.warn(f"{episodes_path}: skipped {len(corrupt)} corrupt line(s) (line {shown}); "
                      "resuming the run rewrites the file without them and runs those episodes "
                      "again", CorruptLinesWarning, stacklevel=2)


def load_episodes(path: str | os.PathLike) -> list[Episode]:
    """All episodes of a run, trajectories included.

    Args:
        path: a run directory or its ``episodes.jsonl``.

    Returns:
        The :class:`Episode` objects, in the file's order (a corrupt line is skipped with a
        :class:`CorruptLinesWarning`).

    Raises:
        ValueError: ``path`` is not a run directory.
    """
    path = run_directory(path)
    _require_run(path)
    return list(iter_episodes(path))


def load_episode(source: Any, index: int = 0) -> dict:
    """One episode as a dict.

    Args:
        source: an :class:`Episode`, an Episode dict, an episode JSON file, a run's
            ``episodes.jsonl`` or a run directory.
        index: which episode of a run (0 = the first line).

    Returns:
        The episode as a dict, trajectory included.

    Raises:
        ValueError: ``source`` is none of these, or the run has no episode ``index``.
    """
    if isinstance(source, Episode):
        return source.to_dict()
    if isinstance(source, dict):
        return Episode.from_dict(source).to_dict()
    if not isinstance(source, (str, Path)):
        raise ValueError("expected an Episode, an Episode dict, or a path to an episode .json, "
                         f"an episodes.jsonl or a run directory; got {type(source).__name__}")
    path = Path(source)
    if path.is_dir():
        path = path / EPISODES_FILE
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    if path.suffix == ".jsonl":
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not -len(lines) <= index < len(lines):
            raise ValueError(f"index {index} out of range: {path} holds {len(lines)} episodes")
        return Episode.from_json(lines[index]).to_dict()
    return Episode.from_dict(json.loads(path.read_text(encoding="utf-8"))).to_dict()


def run_directory(path: str | os.PathLike) -> Path:
    """The run directory named by ``path``.

    Args:
        path: A run directory or its ``episodes.jsonl``.

    Returns:
        The directory.
    """
    path = Path(path)
    return path.parent if path.name == EPISODES_FILE and path.is_file() else path


def load_config(path: str | os.PathLike) -> RunManifest:
    """The parsed ``run.json`` of a run directory.

    Args:
        path: The run directory.

    Returns:
        Its manifest.

    Raises:
        ValueError: ``path`` is not a run directory.
    """
    _require_run(path)
    return json.loads((Path(path) / RUN_FILE).read_text())


def package_versions() -> dict[str, str]:
    """Python, platform and the installed versions of the packages a run depends on.

    Returns:
        ``{"python": ..., "platform": ..., package: version}`` for those installed.
    """
    from importlib import metadata

    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for name in _VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_revision() -> dict[str, Any] | None:
    """The commit (and whether the tree is dirty) of the checkout srelib runs from, if any.

    Returns:
        The commit and dirtiness, or None outside a git checkout.
    """
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=10)
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": sha.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def _require_run(path: str | os.PathLike) -> None:
    path = Path(path)
    if not (path / EPISODES_FILE).exists() and not (path / RUN_FILE).exists():
        raise ValueError(f"{path} is not a run directory: it has neither {RUN_FILE} "
                         f"nor {EPISODES_FILE}")
