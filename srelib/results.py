"""Episode records and the run directory that stores them.

A run directory holds ``run.json`` (the run's configuration, package versions and git revision)
and ``episodes.jsonl`` (one :class:`Episode` per line, trajectory included, appended and flushed
as each episode finishes). A killed run leaves at most one partial last line, which
:func:`load_run` ignores and :class:`RunStore` cuts off before appending again.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator

from srelib.env.actions import PARSE_ERROR

RUN_FILE = "run.json"
EPISODES_FILE = "episodes.jsonl"
#: The columns that identify an episode; resume and de-duplication key on them.
KEY_COLUMNS = ("policy", "task", "pool", "mode", "seed")
#: Score components in the order of ``grading.WEIGHTS`` (see docs/CONTRACTS.md, Scores).
COMPONENTS = ("diagnosis", "mitigation", "repair", "efficiency")
#: Columns of the frames that :func:`load_run` and :func:`srelib.evaluate` return.
COLUMNS = (*KEY_COLUMNS, "final", *COMPONENTS, "r_cross", "p1_steps", "p2_steps", "terminated",
           "truncated", "ended_by", "parse_failures", "tokens", "latency_s", "wall_s", "error")
_VERSIONED = ("srelib", "numpy", "pandas", "matplotlib", "tqdm", "openai", "transformers", "torch")


@dataclass
class Episode:
    """One finished episode: what happened (``steps``), how it scored, and what it cost.

    ``steps`` is the environment's trajectory (docs/CONTRACTS.md), including the handoff
    record; ``score`` is the ``score_trajectory`` breakdown; ``r_cross`` is None unless a
    null-handoff repair value was given. ``tokens`` and ``latency_s`` are None for policies that
    do not record usage. ``error`` holds a policy exception that ended the episode early.
    """

    policy: str
    task: str
    pool: str | None
    mode: str
    seed: int
    steps: list[dict] = field(default_factory=list)
    score: dict | None = None
    r_cross: float | None = None
    parse_failures: int = 0
    tokens: int | None = None
    latency_s: float | None = None
    terminated: bool = False
    truncated: bool = False
    ended_by: str | None = None
    wall_s: float = 0.0
    error: str | None = None

    @property
    def key(self) -> tuple:
        """``(policy, task, pool, mode, seed)``: what resume and de-duplication compare."""
        return tuple(getattr(self, k) for k in KEY_COLUMNS)

    @property
    def final(self) -> float | None:
        return None if self.score is None else self.score.get("final")

    @property
    def handoff(self) -> dict | None:
        """The belief handed to phase 2 (the agent's, or the oracle's in pool B), if any."""
        for record in self.steps:
            effect = record.get("effect") or {}
            if "belief" in effect:
                return effect["belief"]
        return None

    @property
    def phase_steps(self) -> tuple[int, int]:
        """Steps taken in phase 1 and phase 2 (the pool-B automatic handoff is not a step)."""
        counted = (self.score or {}).get("steps")
        if counted:
            return int(counted["p1"]), int(counted["p2"])
        p1 = sum(1 for r in self.steps if r.get("phase") == 1 and r.get("step", 0) > 0)
        p2 = sum(1 for r in self.steps if r.get("phase") == 2)
        return p1, p2

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
    def from_json(cls, text: str) -> "Episode":
        return cls.from_dict(json.loads(text))

    def row(self) -> dict[str, Any]:
        """The episode as one flat row of the results frame (see :data:`COLUMNS`)."""
        score = self.score or {}
        p1, p2 = self.phase_steps
        values = {**{k: getattr(self, k) for k in KEY_COLUMNS}, "final": self.final,
                  **{c: score.get(c) for c in COMPONENTS}, "r_cross": self.r_cross,
                  "p1_steps": p1, "p2_steps": p2}
        values.update({k: getattr(self, k) for k in COLUMNS if k not in values})
        return values


def count_parse_failures(trajectory: list[dict]) -> int:
    """How many steps sent the reserved PARSE_ERROR action (an unreadable model reply)."""
    return sum(1 for r in trajectory if (r.get("action") or {}).get("action_type") == PARSE_ERROR)


def frame_from_episodes(episodes) -> "Any":
    """A tidy DataFrame, one row per episode, sorted by the key columns."""
    import pandas as pd

    frame = pd.DataFrame([e.row() for e in episodes], columns=list(COLUMNS))
    frame = frame.astype({"p1_steps": int, "p2_steps": int, "parse_failures": int,
                          "terminated": bool, "truncated": bool})
    order = frame.sort_values(list(KEY_COLUMNS), na_position="first", kind="stable").index
    return frame.loc[order].reset_index(drop=True)


class RunStore:
    """A run directory: ``run.json`` plus an append-only ``episodes.jsonl``.

    ``RunStore(path, resume=True)`` keeps the episodes already stored (a truncated last line
    from a killed run is cut off); ``resume=False`` starts the episode file afresh.
    """

    def __init__(self, path: str | os.PathLike, *, resume: bool = True):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.episodes_path = self.path / EPISODES_FILE
        if not resume:
            self.episodes_path.write_text("")
        self._repair_tail()
        self.done = {e.key for e in iter_episodes(self.path)}

    def write_config(self, config: dict[str, Any]) -> None:
        """Write ``run.json``: the config, package versions and git revision (kept on resume)."""
        run_file = self.path / RUN_FILE
        previous = json.loads(run_file.read_text()) if run_file.exists() else {}
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        record = {"config": config, "versions": package_versions(), "git": git_revision(),
                  "created": previous.get("created", now),
                  "started": [*previous.get("started", []), now]}
        run_file.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")

    def append(self, episode: Episode) -> bool:
        """Append one episode and flush; returns False (writing nothing) if it is already stored."""
        if episode.key in self.done:
            return False
        with self.episodes_path.open("a", encoding="utf-8") as fh:
            fh.write(episode.to_json() + "\n")
            fh.flush()
        self.done.add(episode.key)
        return True

    def _repair_tail(self) -> None:
        if not self.episodes_path.exists():
            return
        data = self.episodes_path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.episodes_path.open("r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)


def iter_episodes(path: str | os.PathLike) -> Iterator[Episode]:
    """The episodes stored in a run directory, skipping a partial last line and duplicates."""
    episodes_path = Path(path) / EPISODES_FILE
    if not episodes_path.exists():
        return
    seen = set()
    with episodes_path.open(encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            episode = Episode.from_json(line)
        except (json.JSONDecodeError, TypeError, ValueError):
            if number == len(lines):  # the half-written line of a killed run
                break
            raise ValueError(f"{episodes_path}:{number} is not a stored Episode") from None
        if episode.key not in seen:
            seen.add(episode.key)
            yield episode


def load_episodes(path: str | os.PathLike) -> list[Episode]:
    """All episodes of a run directory as :class:`Episode` objects (trajectories included)."""
    _require_run(path)
    return list(iter_episodes(path))


def load_run(path: str | os.PathLike):
    """The episodes of a run directory as a tidy DataFrame, one row per episode."""
    return frame_from_episodes(load_episodes(path))


def load_config(path: str | os.PathLike) -> dict[str, Any]:
    """The parsed ``run.json`` of a run directory."""
    _require_run(path)
    return json.loads((Path(path) / RUN_FILE).read_text())


def package_versions() -> dict[str, str]:
    """Python, platform and the installed versions of the packages a run depends on."""
    from importlib import metadata

    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for name in _VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_revision() -> dict[str, Any] | None:
    """The commit (and whether the tree is dirty) of the checkout srelib runs from, if any."""
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
