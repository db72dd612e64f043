"""LLM providers: one module per chat client in this folder, found by ``pkgutil``.

A provider module decorates its policy class (a :class:`~srelib.policies.llm.chat.ChatPolicyBase`)
with ``@provider("name")``; :func:`provider_class` and :func:`srelib.policies.registry.policy_factory`
then build it by that name. Adding a provider is one new module here and no edit elsewhere.
Modules are read on first use and must import their client library (``openai``,
``transformers``, ...) only when a policy is built or called, so listing providers stays cheap.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Callable

_PROVIDERS: dict[str, type] = {}


def provider(name: str) -> Callable[[type], type]:
    """Class decorator: register the policy class under the provider ``name``."""
    def register(cls: type) -> type:
        if _PROVIDERS.get(name, cls) is not cls:
            raise ValueError(f"provider {name!r} is registered already, by "
                             f"{_PROVIDERS[name].__module__}")
        _PROVIDERS[name] = cls
        return cls
    return register


@functools.lru_cache(maxsize=1)  # no arguments: the folder is read once per process
def _load_folder() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        importlib.import_module(f"{__name__}.{info.name}")


def providers() -> dict[str, type]:
    """Every provider's policy class, by provider name."""
    _load_folder()
    return dict(_PROVIDERS)


def provider_class(name: str) -> type:
    """The policy class of provider ``name``; ValueError naming the valid ones."""
    found = providers()
    if name not in found:
        raise ValueError(f"unknown LLM provider {name!r}; valid providers: {', '.join(sorted(found))}")
    return found[name]
