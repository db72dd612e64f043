"""Chat policy settings as dataclasses, TRL style: :class:`ChatConfig` holds what every provider
shares, under one name per thing; a provider's own settings live in a subclass beside it
(``OpenAIChatConfig``, ``HFChatConfig``). A policy is built from a config, from keywords, or from
a config and keywords that override it (:func:`build_config`); the old names
(:data:`ALIASES`) still work. A setting left None takes the provider's default (or, for a model
folder saved with prompt settings, the folder's): see ``ChatPolicyBase.defaults``.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

#: Old keyword names and the config field each one sets.
ALIASES = {"model_id_or_path": "model", "model_id": "model", "max_new_tokens": "max_tokens"}


@dataclass(kw_only=True)
class ChatConfig:
    """The settings every chat policy takes, whatever the provider.

    Args:
        model: The model: a name the endpoint serves (OpenAI), a hub id or a folder (HF).
        temperature: The sampling temperature; 0 decodes greedily.
        max_tokens: The most tokens one reply may have.
        max_history: How many past exchanges a prompt keeps.
        max_failures: Consecutive failed replies before the policy gives up (GIVE_UP).
        obs_chars: The budget, in characters, of one rendered observation.
        max_prompt_chars: The budget of a whole prompt; the oldest exchanges go first.
        system_prompt: The system turn.
        tools: Send the actions as function tools and keep the conversation in tool turns.
        name: The policy's name in results (default: the provider and the model).
        max_retries: Retries after a failed model call that retrying may fix (a timeout, a
            dropped connection, 429, 5xx), so at most ``max_retries + 1`` attempts.
        backoff: Seconds before the first retry, doubled at each next one.
        max_retry_after: The longest wait a server's ``Retry-After`` may ask for, in seconds.
        deadline: Seconds one call may take, retries and their waits included (None: the
            provider's bound; a wait that would pass it ends the call instead).

    Raises:
        ValueError: A setting out of its range (``max_failures`` below 1, a negative
            ``max_retries`` or ``backoff``, a deadline that is not positive).
    """

    model: str | None = None
    temperature: float = 0.2
    max_tokens: int | None = None
    max_history: int | None = None
    max_failures: int = 3
    obs_chars: int | None = None
    max_prompt_chars: int | None = None
    system_prompt: str | None = None
    tools: bool | None = None
    name: str | None = None
    max_retries: int = 3
    backoff: float = 0.5
    max_retry_after: float = 30.0
    deadline: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.model, os.PathLike):
            self.model = os.fspath(self.model)
        _at_least(self, "max_failures", 1)
        _at_least(self, "max_retries", 0)
        _at_least(self, "backoff", 0)
        _at_least(self, "max_retry_after", 0)
        if self.deadline is not None and not self.deadline > 0:
            raise ValueError(f"deadline must be > 0 seconds, got {self.deadline!r}")

    def settings(self) -> dict[str, Any]:
        """The config's fields and values, shallow (what ``dataclasses.asdict`` would copy).

        Returns:
            Field name to value.
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _at_least(config: Any, field: str, low: float) -> None:
    value = getattr(config, field)
    if value is None or isinstance(value, bool) or not value >= low:
        raise ValueError(f"{field} must be >= {low}, got {value!r}")


def build_config(config_class: type[ChatConfig], config: ChatConfig | None,
                 args: Sequence[Any], overrides: Mapping[str, Any], positional: Sequence[str],
                 where: str) -> ChatConfig:
    """The config a policy is built with: ``config`` (or the defaults), then ``args`` and
    ``overrides`` set over it.

    A plain :class:`ChatConfig` given to a provider with its own config class becomes one, its
    own settings at their defaults. Old names (:data:`ALIASES`) set their field.

    Args:
        config_class: The provider's config class.
        config: A config, or None.
        args: Positional arguments, named in order by ``positional``.
        overrides: Keyword arguments: config fields or their aliases.
        positional: The field each positional argument sets.
        where: The policy class's name, for messages.

    Returns:
        A new ``config_class`` instance.

    Raises:
        TypeError: A config of another provider, too many positional arguments, an unknown
            keyword (the message lists the valid ones) or two names for one field.
    """
    if config is None:
        config = config_class()
    elif type(config) is ChatConfig and config_class is not ChatConfig:
        config = config_class(**config.settings())
    elif not isinstance(config, config_class):
        raise TypeError(f"{where} takes a {config_class.__name__} or a ChatConfig, got "
                        f"{type(config).__name__}")
    if len(args) > len(positional):
        raise TypeError(f"{where} takes at most {len(positional)} positional arguments "
                        f"({', '.join(positional)}), got {len(args)}; pass the rest by keyword")
    given: dict[str, tuple[str, Any]] = {name: (name, value) for name, value in zip(positional, args)}
    for key, value in overrides.items():
        target = ALIASES.get(key, key)
        if target in given:
            raise TypeError(f"{where} got {given[target][0]!r} and {key!r}, two names for "
                            f"{target!r}: give one")
        given[target] = (key, value)
    valid = [f.name for f in fields(config_class)]
    unknown = sorted(given[name][0] for name in given if name not in valid)
    if unknown:
        aliases = ", ".join(f"{old} (= {new})" for old, new in ALIASES.items())
        raise TypeError(f"{where} got unknown keyword argument(s) {', '.join(unknown)}; valid: "
                        f"{', '.join(valid)}; old names still taken: {aliases}")
    return dataclasses.replace(config, **{name: value for name, (_, value) in given.items()})


def with_defaults(config: ChatConfig, defaults: Mapping[str, Any]) -> ChatConfig:
    """``config`` with each of its None settings named in ``defaults`` set to that default.

    Args:
        config: A config.
        defaults: Field name to the value a None takes.

    Returns:
        A new config (``config`` itself when nothing was None).
    """
    missing = {k: v for k, v in defaults.items() if getattr(config, k) is None}
    return dataclasses.replace(config, **missing) if missing else config
