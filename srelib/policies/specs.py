"""Policy specs: what runners accept in place of a policy, and how they turn it into one.

A spec is a policy instance or a zero-argument factory (a class, a ``functools.partial``, a
function, a lambda). Runners build a fresh policy per episode from it, so results never depend
on the order episodes run in.
"""

from __future__ import annotations

import copy
import functools
import inspect
from typing import Any


def is_factory(spec: Any) -> bool:
    """True for a zero-argument factory, False for a policy instance."""
    if isinstance(spec, type):
        return True
    if hasattr(spec, "reset") or hasattr(spec, "act_batch"):
        return False
    try:
        inspect.signature(spec).bind()
    except (TypeError, ValueError):
        return False
    return True


def instantiate(spec: Any, *, copy_instance: bool) -> Any:
    """A policy from ``spec``: a factory's product, or the instance itself (a deep copy of it
    with ``copy_instance``, unless it cannot be copied: clients and models are reused)."""
    if is_factory(spec):
        return spec()
    if not copy_instance:
        return spec
    try:
        return copy.deepcopy(spec)
    except Exception:  # noqa: BLE001 - uncopyable (clients, models): reuse it, reset per episode
        return spec


def describe(spec: Any) -> str:
    """A short, stable description of a spec for a run's ``run.json``."""
    if isinstance(spec, functools.partial):
        parts = [describe(a) for a in spec.args] + [f"{k}={v!r}" for k, v in spec.keywords.items()]
        return f"{getattr(spec.func, '__name__', spec.func)}({', '.join(parts)})"
    if isinstance(spec, type) or inspect.isfunction(spec):
        return f"{spec.__module__}.{spec.__qualname__}"
    return repr(spec) if type(spec).__repr__ is not object.__repr__ else type(spec).__qualname__
