"""The settings of an evaluation as one dataclass: what :func:`srelib.evaluate` plays (the grid)
and how it splits the work, written to a run's ``run.json`` under ``config`` and read back
from it (:meth:`EvalConfig.from_run`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

#: The run.json ``config`` keys that are not an EvalConfig's (the policies, written beside it).
_POLICY_KEYS = ("policies", "registered")


@dataclass(kw_only=True)
class EvalConfig:
    """What :func:`srelib.evaluate` runs, as its keywords of the same names take it.

    Args:
        tasks: ``"all"``, a suite name, or a list of task ids or names.
        pools: The pools to play (a list, a comma-separated string, or None with ``mode``:
            every task in that mode).
        seeds: A count N (seeds 0..N-1) or the seeds themselves.
        mode: ``"p1_only"``, ``"p2_only"`` or ``"joint"``, overriding the pools' modes.
        max_steps: Caps the policy calls of each episode (None: the environment's budgets).
        null_repair: Task -> null-handoff repair, which adds ``r_cross``.
        workers: Processes for scripted policies.
        batch_size: Environments a batched policy plays in lockstep.

    Raises:
        ValueError: ``workers`` or ``batch_size`` below 1.
    """

    tasks: str | Sequence[str] = "all"
    pools: str | Sequence[str | None] | None = ("C",)
    seeds: int | Sequence[int] = 10
    mode: str | None = None
    max_steps: int | None = None
    null_repair: Mapping[str, float] | None = None
    workers: int = 1
    batch_size: int = 32

    def __post_init__(self) -> None:
        for name in ("workers", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.tasks, str):
            self.tasks = list(self.tasks)
        self.pools = pool_list(self.pools)
        if not isinstance(self.seeds, int):
            self.seeds = [int(s) for s in self.seeds]
        if self.null_repair is not None:
            self.null_repair = dict(self.null_repair)

    def to_json(self) -> dict[str, Any]:
        """The config as ``run.json`` holds it (under ``config``, beside the policies).

        Returns:
            Each field's name to its JSON-ready value.
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_run(cls, manifest: Mapping[str, Any]) -> "EvalConfig":
        """The config a run was made with, from its ``run.json`` (as ``load_config`` reads
        it); keys a run saved before this config existed lacks take their defaults.

        Args:
            manifest: A parsed ``run.json``, or its ``config`` part.

        Returns:
            The EvalConfig.

        Raises:
            ValueError: The manifest's config is not a JSON object, or holds a bad value.
        """
        config = manifest.get("config", manifest)
        if not isinstance(config, Mapping):
            raise ValueError(f"a run's config must be a JSON object, got {type(config).__name__}")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in config.items() if k in known})


def pool_list(value: Any) -> list:
    """A list of pools from a list, a comma-separated string, or None (``[None]``).

    Args:
        value: What ``evaluate``'s ``pools`` takes.

    Returns:
        The pools, in order.
    """
    if value is None or isinstance(value, str):
        return [value] if value is None else [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def eval_config(config: EvalConfig | None, **keywords: Any) -> EvalConfig:
    """The evaluation's config: ``config``, or one built from ``evaluate``'s keywords.

    Args:
        config: An EvalConfig, or None.
        **keywords: ``evaluate``'s keywords of the EvalConfig fields.

    Returns:
        The EvalConfig.

    Raises:
        TypeError: ``config`` is not an EvalConfig, or it is given along with keywords
            away from their defaults (the grid would be said twice).
    """
    if config is None:
        return EvalConfig(**keywords)
    if not isinstance(config, EvalConfig):
        raise TypeError(f"config must be an EvalConfig, got {type(config).__name__}")
    defaults = dataclasses.asdict(EvalConfig())
    given = sorted(k for k, v in keywords.items() if _normal(k, v) != defaults[k])
    if given:
        raise TypeError(f"evaluate got config= and also {', '.join(given)}: set them in the "
                        "config (dataclasses.replace(config, ...)) instead")
    return config


def _normal(name: str, value: Any) -> Any:
    return getattr(EvalConfig(**{name: value}), name)
