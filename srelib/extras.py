"""Optional dependencies: which extra brings each one, a one-line error when it is missing, and
a progress bar that is tqdm's when tqdm is installed and silent otherwise."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

#: The pip extra (``pip install 'srelib[EXTRA]'``) that installs each optional module.
EXTRA_OF = {
    "pandas": "demo", "matplotlib": "demo", "tqdm": "demo", "cloudpickle": "cluster",
    "distributed": "cluster", "ray": "cluster", "openai": "llm", "transformers": "hf",
    "torch": "hf", "accelerate": "hf", "bitsandbytes": "hf", "ipywidgets": "notebooks",
    "datasets": "train", "trl": "train", "peft": "train", "openenv": "serve",
    "gymnasium": "gym", "numpy": "demo", "PIL": "demo", "tokenizers": "hf", "huggingface_hub": "hf",
    "fastapi": "serve", "uvicorn": "serve", "websockets": "serve", "orjson": "serve",
    "uvloop": "serve", "mcp": "serve", "fastmcp": "serve", "h11": "serve", "pydantic": "serve",
    "pydantic_core": "serve", "inspect_ai": "inspect", "cryptography": "sign",
    "sklearn": "audit",
}


class MissingExtra(ModuleNotFoundError):
    """An optional dependency is not installed; the message is one line naming the extra."""


def require(module: str, what: str) -> ModuleType:
    """Import an optional module, or say in one line which extra installs it.

    Every import of a package outside the core install goes through this (tests/test_extras.py
    checks the source), so a missing one never surfaces as a bare ``ModuleNotFoundError``.

    Args:
        module: the dotted module name, e.g. ``"pandas"`` or ``"transformers.cache_utils"``.
        what: what needs it, e.g. ``"evaluate"``; it starts the message.

    Returns:
        The imported module.

    Raises:
        MissingExtra: the module's package is not installed; the message names the
            ``pip install 'srelib[EXTRA]'`` that brings it.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise  # the module is there but one of its own imports failed: show it whole
        extra = EXTRA_OF.get(top)
        hint = f"pip install 'srelib[{extra}]'" if extra else f"pip install {top}"
        raise MissingExtra(f"{what} needs {top}, which is not installed: {hint}",
                           name=top) from None


class _Silent:
    """A stand-in for a tqdm bar when tqdm is not installed."""

    def __enter__(self) -> "_Silent":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None


def progress_bar(**kwargs: Any) -> Any:
    """``tqdm.auto.tqdm(**kwargs)`` when tqdm is installed, else a bar that shows nothing."""
    try:
        from tqdm.auto import tqdm
    except ModuleNotFoundError:
        return _Silent()
    return tqdm(**kwargs)
