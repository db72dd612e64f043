"""What episode to play: task, pool, mode and seed, settled before the episode starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .pools import MODES, POOLS


@dataclass(frozen=True)
class EpisodeSpec:
    """Which episode to play: task, pool, mode and seed, with the mode settled before the run
    (from the pool when not given; ``"joint"`` without a pool). ``task`` or ``seed`` None lets
    ``reset`` draw them."""

    task: str | None
    pool: str | None
    mode: str
    seed: int | None

    @classmethod
    def resolve(cls, task: str | None = None, pool: str | None = None,
                mode: str | None = None, seed: int | None = None) -> "EpisodeSpec":
        """The spec for these arguments; ValueError naming the valid pools or modes, or saying
        that a pool's episodes run in its own mode (another mode takes ``pool=None``)."""
        if pool is not None and pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; valid pools: {list(POOLS)}")
        if mode is not None and mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; valid modes: {list(MODES)}")
        if pool is not None and mode is not None and mode != POOLS[pool].mode:
            raise ValueError(f"pool {pool} plays {POOLS[pool].mode} episodes, not {mode}; "
                             f"for a {mode} episode pass pool=None")
        resolved = mode or (POOLS[pool].mode if pool is not None else "joint")
        return cls(task, pool, resolved, seed)

    def reset_kwargs(self) -> dict[str, Any]:
        """The arguments of ``IncidentEnv.reset`` for this spec."""
        return {"task": self.task, "pool": self.pool, "mode": self.mode, "seed": self.seed}
