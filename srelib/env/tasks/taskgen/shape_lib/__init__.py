"""The registry of bug shapes: every module of this package is one shape, found here.

A shape module defines ``SHAPE`` (a :class:`~srelib.env.tasks.taskgen.shapes.Shape`) and ``SPLIT``
(``"train"`` or ``"heldout"``): a held-out shape's tasks are all held out, so no held-out task
shares its bug shape with a train task. Adding a shape is adding one module here.

Shapes are ordered: the no-fault family deals them out in turn, so the order decides which
feature each of its tasks ships. The shapes written first keep the places they had
(:data:`FIRST`); every other module follows in name order.

A private suite (:func:`srelib.env.tasks.surface.suite_dir`) adds the modules of its ``shapes/``
folder, which the evaluator keeps: one defining ``SHAPE`` and ``SPLIT`` is a shape, one
defining ``FAMILY`` a family (:mod:`..family_lib`), after the public ones, so a held-out
split can hold bugs no public file shows.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from pathlib import Path
from types import MappingProxyType, ModuleType

from srelib.env.tasks.surface import suite_dir

from ..shapes import Shape

SPLITS = ("train", "heldout")
#: The first shapes, in the order the generated suite was built with.
FIRST = ("lru", "subscribers", "lease", "slots", "backoff", "budget", "units", "flags",
         "lock_order", "reentry", "keying", "namespace", "money", "timestamps")


def _private_paths() -> list[Path]:
    folder = suite_dir()
    return [] if folder is None else sorted((folder / "shapes").glob("*.py"))


def private_sources() -> list[tuple[str, bytes]]:
    """``(file name, bytes)`` of the private suite's shape and family modules (none: public)."""
    return [(path.name, path.read_bytes()) for path in _private_paths()]


@functools.lru_cache(maxsize=1)  # no arguments: the private folder's modules, loaded once
def private_modules() -> tuple[ModuleType, ...]:
    """The private suite's shape and family modules, imported from its folder.

    Raises:
        ValueError: a module fails to import (its error named).
    """
    modules = []
    for path in _private_paths():
        spec = importlib.util.spec_from_file_location(f"srelib_private_shapes.{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ValueError(f"private shape module {path} cannot be imported (not a .py file?)")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise ValueError(f"private shape module {path} failed to import: "
                             f"{type(exc).__name__}: {exc}") from None
        modules.append(module)
    return tuple(modules)


def _load() -> tuple[dict[str, Shape], dict[str, str], frozenset]:
    shapes: dict[str, Shape] = {}
    splits: dict[str, str] = {}
    names = sorted(info.name for info in pkgutil.iter_modules(__path__))
    public = [importlib.import_module(f"{__name__}.{name}")
              for name in [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]]
    private = [m for m in private_modules() if hasattr(m, "SHAPE")]
    for module in public + private:
        shape, split = getattr(module, "SHAPE", None), getattr(module, "SPLIT", None)
        if not isinstance(shape, Shape) or split not in SPLITS:
            raise ValueError(f"shape module {module.__name__} must define SHAPE (a Shape) and "
                             f"SPLIT (one of {SPLITS}), got {shape!r}, {split!r}")
        if shape.name in shapes:
            raise ValueError(f"shape module {module.__name__}: shape {shape.name!r} exists already")
        shape.bad()  # every bug anchor matches once
        shapes[shape.name], splits[shape.name] = shape, split
    return shapes, splits, frozenset(list(shapes)[:len(public)])


_shapes, _splits, _public = _load()
#: Every shape by name, in the order above.
SHAPES = MappingProxyType(_shapes)
#: The split of each shape's tasks, by shape name.
SHAPE_SPLITS = MappingProxyType(_splits)
#: The shapes this package ships (a private suite's own are the others): whoever holds srelib
#: knows their code, so a task of one is no secret even in a keyed suite.
PUBLIC_SHAPES = _public

__all__ = ["FIRST", "PUBLIC_SHAPES", "SHAPES", "SHAPE_SPLITS", "SPLITS", "Shape", "private_modules", "private_sources"]
