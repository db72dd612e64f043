"""The registry of fault families: every module of this package is one family, found here.

A family module defines ``FAMILY`` (a :class:`~srelib.env.tasks.taskgen.families.Family`) whose fault
class is one of ``FAULT_CLASSES`` and whose symptoms are keys of ``SYMPTOMS``; its bug shapes
are those of :mod:`..shape_lib` that name it (or that it borrows). Adding a family is adding one
module here. Candidates are built family by family, so the families written first keep the
places they had (:data:`FIRST`); every other module follows in name order.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType

from srelib.env.actions import FAULT_CLASSES

from ..families import SYMPTOMS, Family
from ..shape_lib import SHAPES, private_modules

#: The first families, in the order the generated suite was built with.
FIRST = ("memory_leak", "pool_exhaustion", "retry_storm", "config_change", "deadlock",
         "cache_thrash", "shared_dependency", "none")


def _check(module: str, family: object, known: dict) -> Family:
    if not isinstance(family, Family):
        raise ValueError(f"family module {module} must define FAMILY (a Family), got {family!r}")
    if family.name in known:
        raise ValueError(f"family module {module}: family {family.name!r} exists already")
    if family.fault_class not in FAULT_CLASSES:
        raise ValueError(f"family {family.name}: fault class {family.fault_class!r} not in "
                         f"FAULT_CLASSES {FAULT_CLASSES}")
    if not family.symptoms or any(s not in SYMPTOMS for s in family.symptoms):
        raise ValueError(f"family {family.name}: symptoms {family.symptoms} must be keys of "
                         f"SYMPTOMS {sorted(SYMPTOMS)}")
    unknown = sorted(set(family.borrows) - set(SHAPES))
    if unknown:
        raise ValueError(f"family {family.name}: borrows unknown shapes {unknown}")
    return family


def _load() -> dict[str, Family]:
    families: dict[str, Family] = {}
    names = sorted(info.name for info in pkgutil.iter_modules(__path__))
    for name in [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]:
        module = importlib.import_module(f"{__name__}.{name}")
        family = _check(module.__name__, getattr(module, "FAMILY", None), families)
        families[family.name] = family
    for module in private_modules():  # a private suite's families (shape_lib's doc)
        if hasattr(module, "FAMILY"):
            family = _check(module.__name__, module.FAMILY, families)
            families[family.name] = family
    unknown = sorted({s.family for s in SHAPES.values()} - set(families))
    if unknown:
        raise ValueError(f"shapes name unknown families {unknown}; valid: {sorted(families)}")
    return families


#: Every family by name, in the order above.
FAMILIES = MappingProxyType(_load())

__all__ = ["FAMILIES", "FIRST", "Family"]
