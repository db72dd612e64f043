"""The registry of bug shapes: every module of this package is one shape, found here.

A shape module defines ``SHAPE`` (a :class:`~srelib.env.taskgen.shapes.Shape`) and ``SPLIT``
(``"train"`` or ``"heldout"``): a held-out shape's tasks are all held out, so no held-out task
shares its bug shape with a train task. Adding a shape is adding one module here. The first
shapes, written before this package, still live in :mod:`..shapes`; their splits are listed
below.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType

from ..shapes import SHAPES as _FIRST_SHAPES
from ..shapes import Shape

SPLITS = ("train", "heldout")
_FIRST_HELDOUT = ("subscribers", "slots", "budget", "flags", "reentry", "namespace", "timestamps")


def _load() -> tuple[dict[str, Shape], dict[str, str]]:
    shapes = dict(_FIRST_SHAPES)
    splits = {name: "heldout" if name in _FIRST_HELDOUT else "train" for name in shapes}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
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
#: Every shape by name: the first ones, then this package's modules in name order.
SHAPES = MappingProxyType(_shapes)
#: The split of each shape's tasks, by shape name.
SHAPE_SPLITS = MappingProxyType(_splits)

__all__ = ["SHAPES", "SHAPE_SPLITS", "SPLITS", "Shape"]
