"""srelib's incident environment as a Gymnasium environment, ``srelib/Incident-v0``.

Gymnasium 1.x loads no plugins, so the id is registered when this module is imported; name
the module in the id and ``gymnasium.make`` imports it for you::

    import gymnasium
    env = gymnasium.make("srelib.integrations.gym:srelib/Incident-v0", pool="B")
    obs, info = env.reset(seed=7, options={"task": "memory_leak"})

Needs ``pip install 'srelib[gym]'``.
"""

from __future__ import annotations

import json
import string
from typing import Any

from srelib.extras import require

gymnasium = require("gymnasium", "the Gymnasium adapter")

from srelib.env.core import IncidentEnv  # noqa: E402 - after the one-line install hint

ENV_ID = "srelib/Incident-v0"
#: Every character ``json.dumps(..., ensure_ascii=True)`` can write: printable ASCII.
JSON_CHARSET = "".join(chr(c) for c in range(0x20, 0x7F))
#: Bounds of the text spaces, in characters of JSON.
MAX_OBSERVATION_CHARS = 1 << 22
MAX_ACTION_CHARS = 1 << 20
#: Keys ``reset(options=...)`` takes; each defaults to the value given to the constructor.
RESET_OPTIONS = ("task", "pool", "mode")


def observation_text(observation: dict) -> str:
    """An observation as the space's text: JSON, ASCII only, keys in the env's order."""
    return json.dumps(observation, ensure_ascii=True)


class IncidentGymEnv(gymnasium.Env):
    """:class:`srelib.IncidentEnv` behind ``gymnasium.Env``; the same episodes, as JSON text.

    **Spaces.** The observation is ``json.dumps(obs, ensure_ascii=True)`` of IncidentEnv's
    observation dict (``json.loads`` gives it back); the action is text too: an entry of
    ``obs["valid_actions"]`` such as ``"query_logs:orders"``, or a JSON action
    ``{"action_type", "target_service", "parameters"}``. Both are
    ``gymnasium.spaces.Text`` over printable ASCII (``JSON_CHARSET``), at most
    ``MAX_OBSERVATION_CHARS`` / ``MAX_ACTION_CHARS`` long. A text outside the vocabulary is
    an invalid action: it costs a step and its observation says what is valid.

    **Reset.** ``task``, ``pool`` and ``mode`` come from ``options`` and default to the
    constructor's. ``reset(seed=s)`` plays IncidentEnv's episode for seed ``s`` and seeds
    ``np_random``; ``reset()`` draws the episode seed from ``np_random``, so a run seeded
    once replays in full. ``info`` is IncidentEnv's, with the episode seed in ``info["seed"]``.

    **Step** returns IncidentEnv's reward, ``terminated`` (the agent ended the episode) and
    ``truncated`` (the step budget ran out, or the policy gave up); the last step's
    ``info["score"]`` holds the episode's score breakdown.
    """

    metadata = {"render_modes": []}

    def __init__(self, task: str | None = None, pool: str | None = None,
                 mode: str | None = None) -> None:
        self.observation_space = gymnasium.spaces.Text(MAX_OBSERVATION_CHARS, min_length=2,
                                                       charset=JSON_CHARSET)
        self.action_space = gymnasium.spaces.Text(MAX_ACTION_CHARS, min_length=1,
                                                  charset=JSON_CHARSET)
        self._defaults = {"task": task, "pool": pool, "mode": mode}
        self.incident = IncidentEnv()

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; ``options`` may hold ``task``, ``pool`` and ``mode``."""
        unknown = sorted(set(options or {}) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; valid: {list(RESET_OPTIONS)}")
        super().reset(seed=seed)
        episode_seed = seed if seed is not None else int(self.np_random.integers(2**63 - 1))
        obs, info = self.incident.reset(**{**self._defaults, **(options or {})}, seed=episode_seed)
        return observation_text(obs), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply one action (text as in the class docstring; a dict is taken as well)."""
        obs, reward, terminated, truncated, info = self.incident.step(action)
        return observation_text(obs), float(reward), terminated, truncated, info


def register() -> None:
    """Register ``srelib/Incident-v0`` with Gymnasium (again: a no-op)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=f"{__name__}:IncidentGymEnv")


register()
