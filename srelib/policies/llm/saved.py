"""Prompt settings saved beside a model, so a chat policy prompts it the way it was trained.

A folder made by ``srelib agent train`` holds :data:`SETTINGS_FILE` next to its weights: the
chat-policy keyword arguments (``system_prompt``, ``obs_chars``, ``max_history``,
``max_prompt_chars``, ``max_new_tokens``, ``tools``) the model was trained with. A chat policy given that
folder takes them as its defaults; an argument passed explicitly still wins.

A saved folder is input, not code: before a policy uses it, :func:`saved_settings` checks the
settings against :data:`SETTING_SCHEMA` (types, bounds) and the model's JSON files
(:data:`MODEL_FILES`) for sizes past :data:`MODEL_BOUNDS` and for ``auto_map``, the key that
would point the loader at code in the folder; anything else raises ValueError naming the file
and the key. Nothing in the folder is imported or run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SETTINGS_FILE = "srelib_prompt.json"
#: Each setting's type and bounds: (type, low, high), on the value of an int and the length of a str.
SETTING_SCHEMA = {"system_prompt": (str, 1, 50_000), "obs_chars": (int, 100, 200_000),
                  "max_history": (int, 0, 200), "max_prompt_chars": (int, 500, 1_000_000),
                  "max_new_tokens": (int, 1, 8192), "tools": (bool, None, None)}
#: The keys a settings file may hold (the chat policies' keyword arguments).
SETTING_KEYS = tuple(SETTING_SCHEMA)
#: The model's JSON files srelib checks before the loader reads them.
MODEL_FILES = ("config.json", "tokenizer_config.json", "generation_config.json")
#: Upper bounds on a model config's sizes, at any depth (``text_config`` too).
MODEL_BOUNDS = {"vocab_size": 1 << 20, "hidden_size": 1 << 15, "intermediate_size": 1 << 17,
                "num_hidden_layers": 512, "num_attention_heads": 1024, "num_key_value_heads": 1024,
                "head_dim": 4096, "max_position_embeddings": 1 << 21, "max_new_tokens": 8192}
MAX_JSON_BYTES = 1 << 20


def _read_json(path: Path) -> dict:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise ValueError(f"{path} is over {MAX_JSON_BYTES} bytes")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, or nested too deep
        raise ValueError(f"{path} is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def check_settings(settings: dict, where: str = "prompt settings") -> dict:
    """``settings`` if every key is in :data:`SETTING_SCHEMA` with a value of its type within its
    bounds (no bool for an int, no string for a number); else ValueError naming the key."""
    unknown = sorted(set(settings) - set(SETTING_KEYS))
    if unknown:
        raise ValueError(f"{where} has unknown keys {unknown}; valid keys: {list(SETTING_KEYS)}")
    for key, value in settings.items():
        kind, low, high = SETTING_SCHEMA[key]
        if type(value) is not kind:
            raise ValueError(f"{where}: {key} must be of type {kind.__name__}, got {type(value).__name__}")
        size = len(value) if kind is str else value
        if low is not None and not low <= size <= high:
            what = "its length" if kind is str else "it"
            raise ValueError(f"{where}: {key} must be from {low} to {high} ({what} is {size})")
    return settings


def _check_model_json(path: Path) -> None:
    def walk(value, depth: int) -> None:
        if depth > 8:
            raise ValueError(f"{path} nests deeper than 8 levels")
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            if key == "auto_map":
                raise ValueError(f"{path} names code to load (auto_map); srelib runs no code from a "
                                 "model folder")
            if key in MODEL_BOUNDS and item is not None and (
                    type(item) is not int or not 0 < item <= MODEL_BOUNDS[key]):
                raise ValueError(f"{path}: {key} must be a whole number from 1 to "
                                 f"{MODEL_BOUNDS[key]}, got {str(item)[:40]}")
            walk(item, depth + 1)

    walk(_read_json(path), 0)


def saved_settings(source: str | os.PathLike | None) -> dict:
    """The checked prompt settings saved in the folder ``source`` (module doc); ``{}`` for a hub
    id or a folder without them. A folder's model JSON files are checked too."""
    if source is None or not Path(source).is_dir():
        return {}
    folder = Path(source)
    for name in MODEL_FILES:
        if (folder / name).is_file():
            _check_model_json(folder / name)
    if not (folder / SETTINGS_FILE).is_file():
        return {}
    return check_settings(_read_json(folder / SETTINGS_FILE), str(folder / SETTINGS_FILE))


def save_settings(folder: str | os.PathLike, settings: dict) -> None:
    """Write ``settings`` (checked against :data:`SETTING_SCHEMA`) beside a saved model."""
    check_settings(settings)
    (Path(folder) / SETTINGS_FILE).write_text(json.dumps(settings, indent=1, sort_keys=True),
                                              encoding="utf-8")
