"""Scenarios as data: one folder per hand-written task in ``scenario_data/``.

Adding a scenario means adding a folder ``scenario_data/<name>/``:

* ``scenario.json``: the public facts other modules rely on (the fields listed in
  docs/CONTRACTS.md), the simulation spec that ``infra`` plays out (deploy histories, hidden
  conditions, the scenario's own log lines, optional red herrings), ``repo`` (a repository in
  ``repo_data/``, which several scenarios may share) and ``tests``:
  ``{"fail_to_pass": [test ids], "pass_to_pass": [test ids]}`` of that repository's hidden tests;
* ``fix/<path>``: the full contents of each file the reference fix rewrites (no ``fix/``: the
  task needs no code change).

Every folder is validated when it is loaded; ``srelib tasks check PATH`` checks one against its
repository too. This module knows only these folders: generated tasks (``family.service.site``)
are built by ``srelib.env.tasks.taskgen``, and :func:`srelib.env.tasks.lookup.get_scenario` finds either.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from srelib.env.actions import FAULT_CLASSES, LOG_LEVELS, SERVICES, ActionType
from srelib.env.types import Severity

DATA_DIR = Path(__file__).with_name("scenario_data")
METRIC_NAMES = ("cpu", "memory", "error_rate", "latency_p50", "latency_p95", "latency_p99", "rps")
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
_SHA = re.compile(r"^[0-9a-f]{7}$")
_CLEARING_ACTIONS = (ActionType.RESTART_SERVICE.value, ActionType.SCALE_SERVICE.value)
_REMEDIATIONS = ("restart_service", "rollback_deploy", "scale_service")


@dataclass(frozen=True)
class DeploySpec:
    """One deploy of a service; ``ago`` is minutes before the page; sha None = seeded random."""

    version: str
    ago: int
    description: str
    author: str | None = None
    sha: str | None = None
    bad: bool = False


@dataclass(frozen=True)
class LogTemplate:
    """A log line a condition emits every ``every`` minutes while it is active.

    ``when`` = (metric, ">" or "<", value) restricts it to minutes where the service's metric
    passes; ``stage`` = "cause_active" / "cause_cleared" restricts it to one stage of a
    consequence. The message may use the current metrics and the fill-ins ``{pause_ms}``,
    ``{count}``, ``{ms}``, ``{trace}`` and ``{peer}``.
    """

    level: str
    message: str
    every: int = 1
    when: tuple | None = None
    stage: str | None = None


@dataclass(frozen=True)
class ConditionSpec:
    """A hidden condition of one service: a fault, a consequence of a fault, or a benign effect.

    ``cause`` is "deploy" (the service's bad latest deploy; cleared by rolling it back), the id
    of another condition (a consequence), or None (benign, independent of any action).
    A consequence clears with its cause unless ``residual``; a residual one stays until one of
    ``cleared_by`` is applied after its cause is gone (before that, the action only relieves it).
    """

    id: str
    service: str
    cause: str | None
    delay: int = 2
    ago: int = 0
    ramp: int = 4
    target: tuple = ()
    memory_rate: float = 0.0
    status_floor: str | None = None
    masks: tuple = ()
    residual: bool = False
    cleared_by: tuple = ()
    peers: tuple = ()
    logs: tuple = ()


@dataclass(frozen=True)
class ScenarioLog:
    """A line of the scenario's own story, ``ago`` minutes before the page."""

    service: str
    ago: int
    level: str
    message: str
    trace: str | None = None


@dataclass(frozen=True)
class RedHerring:
    """A misleading line that appears with ``chance`` at a seeded minute in ``window``.

    ``window`` = (earliest, latest) minutes relative to the page (negative = before it).
    """

    service: str
    level: str
    message: str
    window: tuple = (-25, 10)
    chance: float = 0.6


@dataclass(frozen=True)
class Scenario:
    """One incident: the public facts and the simulation spec."""

    name: str
    title: str
    severity: Severity
    summary: str
    root_cause_service: str
    acceptable_services: tuple
    fault_class: str
    correct_root_cause: str
    keywords: tuple
    involved_services: tuple
    required_remediation: tuple
    needs_fix: bool
    repo: str
    bad_commit: str | None
    expected_p1_steps: int
    expected_p2_steps: int
    max_steps: int
    heldout: bool
    order: int
    deploys: tuple  # ((service, (DeploySpec, ...)), ...) oldest first
    conditions: tuple
    logs: tuple
    red_herrings: tuple
    innocent_deploy: bool = True
    pinned_services: tuple = ()  # the summary pins their symptoms: seeded noise never reaches them

    def deploy_specs(self, service: str) -> tuple:
        """The scripted deploys of ``service`` (empty: routine deploys are generated)."""
        for name, specs in self.deploys:
            if name == service:
                return specs
        return ()


def _build(cls, raw: dict, where: str, tuples: tuple = ()):
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object, got {type(raw).__name__}")
    known = set(cls.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}; valid keys: {sorted(known)}")
    values = {k: tuple(tuple(x) if isinstance(x, list) else x for x in v) if k in tuples else v
              for k, v in raw.items()}
    try:
        return cls(**values)
    except TypeError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _check(cond: bool, where: str, msg: str) -> None:
    if not cond:
        raise ValueError(f"{where}: {msg}")


def _parse(raw: dict, where: str) -> Scenario:
    raw = dict(raw)
    deploys = tuple(
        (svc, tuple(_build(DeploySpec, d, f"{where} deploys.{svc}") for d in specs))
        for svc, specs in raw.pop("deploys", {}).items()
    )
    conditions = tuple(
        _build(ConditionSpec, {**c, "logs": tuple(
            _build(LogTemplate, {**t, **({"when": tuple(t["when"])} if t.get("when") else {})},
                   f"{where} condition {c.get('id')} log") for t in c.get("logs", ()))},
               f"{where} condition {c.get('id')}", tuples=("target", "masks", "cleared_by", "peers"))
        for c in raw.pop("conditions", ())
    )
    logs = tuple(_build(ScenarioLog, x, f"{where} log") for x in raw.pop("logs", ()))
    herrings = tuple(_build(RedHerring, x, f"{where} red herring", tuples=("window",))
                     for x in raw.pop("red_herrings", ()))
    s = _build(Scenario, {**raw, "deploys": deploys, "conditions": conditions, "logs": logs,
                          "red_herrings": herrings}, where,
               tuples=("acceptable_services", "keywords", "involved_services",
                       "required_remediation", "pinned_services"))
    _validate(s, where)
    return s


#: The largest step budget a task may declare (``max_steps``); it bounds the rewards
#: (:data:`srelib.env.core.REWARD_RANGE`).
MAX_STEPS = 40


def _validate(s: Scenario, where: str) -> None:
    _check(isinstance(s.max_steps, int) and 1 <= s.max_steps <= MAX_STEPS, where,
           f"max_steps must be an integer from 1 to {MAX_STEPS}")
    _check(s.severity in SEVERITIES, where, f"severity must be one of {SEVERITIES}")
    _check(s.fault_class in FAULT_CLASSES, where, f"fault_class must be one of {list(FAULT_CLASSES)}")
    services = {s.root_cause_service, *s.acceptable_services, *s.involved_services,
                *s.pinned_services}
    _check(services <= set(SERVICES), where, f"unknown services {sorted(services - set(SERVICES))}")
    for rem in s.required_remediation:
        action, _, svc = rem.partition(":")
        _check(action in _REMEDIATIONS and svc in SERVICES, where, f"bad remediation {rem!r}")
    ids = {c.id for c in s.conditions}
    _check(len(ids) == len(s.conditions), where, "condition ids must be unique")
    for c in s.conditions:
        cw = f"{where} condition {c.id}"
        _check(c.service in SERVICES, cw, "unknown service")
        _check(c.cause in (None, "deploy") or c.cause in ids, cw, f"unknown cause {c.cause!r}")
        _check(all(m in METRIC_NAMES for m, _ in c.target), cw, f"target metrics: {METRIC_NAMES}")
        _check(set(c.cleared_by) <= set(_CLEARING_ACTIONS), cw, f"cleared_by: {_CLEARING_ACTIONS}")
        _check(not c.residual or c.cleared_by, cw, "a residual condition needs cleared_by")
        _check(c.status_floor in (None, "degraded", "down"), cw, "status_floor: degraded or down")
        _check(all(t.level in LOG_LEVELS for t in c.logs), cw, f"log levels: {LOG_LEVELS}")
        if c.cause == "deploy":
            specs = s.deploy_specs(c.service)
            _check(bool(specs) and specs[-1].bad, cw, "cause 'deploy' needs a bad latest deploy")
    for svc, specs in s.deploys:
        _check(svc in SERVICES, where, f"deploys of unknown service {svc!r}")
        _check([d.ago for d in specs] == sorted((d.ago for d in specs), reverse=True), where,
               f"deploys of {svc} must be oldest first")
        for d in specs:
            _check(d.sha is None or bool(_SHA.match(d.sha)), where, f"sha {d.sha!r} is not 7-hex")
            _check(not d.bad or d.sha == s.bad_commit, where, "a bad deploy must carry bad_commit")
    for log in s.logs:
        _check(log.service in SERVICES and log.level in LOG_LEVELS, where, f"bad log {log}")
    for h in s.red_herrings:
        _check(h.service in SERVICES and h.level in LOG_LEVELS, where, f"bad red herring {h}")


@dataclass(frozen=True)
class ScenarioFolder:
    """A hand-written task as stored: its Scenario, its test ids and where its fix lives."""

    path: Path
    scenario: Scenario
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]

    def fix_files(self) -> dict[str, str] | None:
        """The files the reference fix rewrites, {path: text}; None when no change is needed."""
        root = self.path / "fix"
        if not root.is_dir():
            return None
        return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
                for p in sorted(root.rglob("*"))
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def _test_ids(raw: Any, where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    _check(isinstance(raw, dict), where, "'tests' must be an object with fail_to_pass and pass_to_pass")
    unknown = set(raw) - {"fail_to_pass", "pass_to_pass"}
    _check(not unknown, where, f"tests: unknown keys {sorted(unknown)}; valid keys: "
                               "['fail_to_pass', 'pass_to_pass']")
    lists = []
    for key in ("fail_to_pass", "pass_to_pass"):
        ids = raw.get(key, [])
        _check(isinstance(ids, list) and all(isinstance(i, str) and "::" in i for i in ids), where,
               f"tests.{key} must be a list of '<file>::test_<name>' ids")
        lists.append(tuple(ids))
    return lists[0], lists[1]


def read_folder(path: Path | str) -> ScenarioFolder:
    """Read and validate one scenario folder; ValueError saying what is wrong."""
    path = Path(path)
    where = f"{path.name}/scenario.json"
    _check((path / "scenario.json").is_file(), path.name, "no scenario.json in the folder")
    try:
        raw = json.loads((path / "scenario.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where}: not valid JSON ({exc})") from None
    _check(isinstance(raw, dict), where, "expected an object")
    raw = dict(raw)
    _check("tests" in raw, where, "missing 'tests' (fail_to_pass and pass_to_pass test ids)")
    f2p, p2p = _test_ids(raw.pop("tests"), where)
    scenario = _parse(raw, where)
    _check(scenario.name == path.name, where, f"name {scenario.name!r} must match the folder name")
    return ScenarioFolder(path, scenario, f2p, p2p)


def _load_all() -> dict[str, ScenarioFolder]:
    found = [read_folder(p) for p in sorted(DATA_DIR.iterdir()) if p.is_dir()]
    found.sort(key=lambda f: (f.scenario.order, f.scenario.name))
    return {f.scenario.name: f for f in found}


#: The hand-written tasks' folders, by task name.
FOLDERS: dict[str, ScenarioFolder] = _load_all()
SCENARIOS: dict[str, Scenario] = {name: f.scenario for name, f in FOLDERS.items()}

#: The hand-written (``classic``) task names in the reference's registry order.
TASKS: tuple[str, ...] = tuple(SCENARIOS)


def is_classic(name: str) -> bool:
    """Is ``name`` the name of a hand-written (classic) task? Every other task is generated."""
    return name in SCENARIOS

def unknown_task_message(names: object) -> str:
    """Why ``names`` (one id or a list) are no tasks: the suites and a few example ids."""
    what = f"unknown tasks {names}" if isinstance(names, list) else f"unknown task {names!r}"
    return (f"{what}; valid tasks: the 'classic' suite {list(TASKS)} and the 'generated' suite "
            "(ids '<family>.<service>.<site>'; srelib.list_tasks('generated') lists them), or a "
            "suite name ('classic', 'generated', 'generated:heldout', ...)")
