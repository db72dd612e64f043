"""Prompt settings saved beside a model, so a chat policy prompts it the way it was trained.

A folder made by ``srelib agent train`` holds :data:`SETTINGS_FILE` next to its weights: the
chat-policy keyword arguments (``system_prompt``, ``obs_chars``, ``max_history``,
``max_prompt_chars``, ``max_new_tokens``, ``tools``) the model was trained with. A chat policy given that
folder takes them as its defaults; an argument passed explicitly still wins.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SETTINGS_FILE = "srelib_prompt.json"
#: The keys a settings file may hold (the chat policies' keyword arguments).
SETTING_KEYS = ("system_prompt", "obs_chars", "max_history", "max_prompt_chars", "max_new_tokens",
                "tools")


def saved_settings(source: str | os.PathLike | None) -> dict:
    """The prompt settings saved in the folder ``source``; ``{}`` for a hub id or a folder
    without them. A settings file with unknown keys raises ValueError naming the valid ones."""
    if source is None or not (Path(source) / SETTINGS_FILE).is_file():
        return {}
    settings = json.loads((Path(source) / SETTINGS_FILE).read_text(encoding="utf-8"))
    unknown = sorted(set(settings) - set(SETTING_KEYS))
    if unknown:
        raise ValueError(f"{Path(source) / SETTINGS_FILE} has unknown keys {unknown}; "
                         f"valid keys: {list(SETTING_KEYS)}")
    return settings


def save_settings(folder: str | os.PathLike, settings: dict) -> None:
    """Write ``settings`` (keys from :data:`SETTING_KEYS`) beside a saved model."""
    unknown = sorted(set(settings) - set(SETTING_KEYS))
    if unknown:
        raise ValueError(f"unknown prompt settings {unknown}; valid keys: {list(SETTING_KEYS)}")
    (Path(folder) / SETTINGS_FILE).write_text(json.dumps(settings, indent=1, sort_keys=True),
                                              encoding="utf-8")
