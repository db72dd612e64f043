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
    "gymnasium": "gym", "sklearn": "dev",
}


class MissingExtra(ImportError):
    """An optional dependency is not installed; the message is one line naming the extra."""


def require(module: str, what: str) -> ModuleType:
    """Import ``module`` for ``what`` (e.g. ``"evaluate"``), or raise :class:`MissingExtra`
    saying which extra to install."""
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
