"""The registry of bug shapes: every module of this package is one shape, found here.

A shape module defines ``SHAPE`` (a :class:`~srelib.env.taskgen.shapes.Shape`) and ``SPLIT``
(``"train"`` or ``"heldout"``): a held-out shape's tasks are all held out, so no held-out task
shares its bug shape with a train task. Adding a shape is adding one module here.

Shapes are ordered: the no-fault family deals them out in turn, so the order decides which
feature each of its tasks ships. The shapes written first keep the places they had
(:data:`FIRST`); every other module follows in name order.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType

from ..shapes import Shape

SPLITS = ("train", "heldout")
#: The first shapes, in the order the generated suite was built with.
FIRST = ("lru", "subscribers", "lease", "slots", "backoff", "budget", "units", "flags",
         "lock_order", "reentry", "keying", "namespace", "money", "timestamps")


def _load() -> tuple[dict[str, Shape], dict[str, str]]:
    shapes: dict[str, Shape] = {}
    splits: dict[str, str] = {}
    names = sorted(info.name for info in pkgutil.iter_modules(__path__))
    for name in [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]:
        module = importlib.import_module(f"{__name__}.{name}")
        shape, split = getattr(module, "SHAPE", None), getattr(module, "SPLIT", None)
        if not isinstance(shape, Shape) or split not in SPLITS:
            raise ValueError(f"shape module {module.__name__} must define SHAPE (a Shape) and "
                             f"SPLIT (one of {SPLITS}), got {shape!r}, {split!r}")
        if shape.name in shapes:
            raise ValueError(f"shape module {module.__name__}: shape {shape.name!r} exists already")
        shape.bad()  # every bug anchor matches once
        shapes[shape.name], splits[shape.name] = shape, split
    return shapes, splits


_shapes, _splits = _load()
#: Every shape by name, in the order above.
SHAPES = MappingProxyType(_shapes)
#: The split of each shape's tasks, by shape name.
SHAPE_SPLITS = MappingProxyType(_splits)

__all__ = ["FIRST", "SHAPES", "SHAPE_SPLITS", "SPLITS", "Shape"]
