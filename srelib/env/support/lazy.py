"""Sub-packages whose modules load on first use (PEP 562), so importing one stays light."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Callable


def lazy_modules(package: str, names: list[str]) -> Callable[[str], ModuleType]:
    """A package's ``__getattr__`` that imports its module ``name`` when first asked for it.

    Args:
        package: the package's ``__name__``.
        names: its modules (its ``__all__``).

    Returns:
        The ``__getattr__`` to bind in the package's ``__init__``.
    """

    def __getattr__(name: str) -> ModuleType:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return importlib.import_module(f"{package}.{name}")

    return __getattr__
