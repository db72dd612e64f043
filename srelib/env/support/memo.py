"""Memos bounded in bytes, for what a long-running server or evaluation keeps.

:class:`ByteLRU` maps keys to values and drops the least recently used entries while their
sizes add up to more than ``max_bytes``; :func:`byte_lru` memoises a function in one.
:func:`deep_size` is the default measure of an entry.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
from collections import OrderedDict
from dataclasses import fields, is_dataclass
from typing import Any, Callable, Generic, Hashable, ParamSpec, Protocol, TypeVar, cast

_MISSING = object()
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def deep_size(obj: object) -> int:
    """Bytes ``obj`` holds (``sys.getsizeof``), with its containers, dataclass fields, slots,
    instance dicts and code constants, each object counted once. Classes, modules and
    functions count as their own size only (what they refer to is shared, not held)."""
    seen: set[int] = set()
    total, todo = 0, [obj]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, _OPAQUE):
            continue
        if isinstance(item, dict) or isinstance(item, types.MappingProxyType):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            todo += list(item)
        elif isinstance(item, types.CodeType):
            todo += [*item.co_consts, *item.co_names]
        elif not isinstance(item, (str, bytes, int, float, bool)) and item is not None:
            if is_dataclass(item):
                todo += [getattr(item, f.name, None) for f in fields(item)]
            todo += [getattr(item, s, None) for s in getattr(type(item), "__slots__", ())]
            if hasattr(item, "__dict__"):
                todo.append(vars(item))
    return total


class ByteLRU:
    """A thread-safe mapping of at most ``max_bytes`` (entries measured by
    ``size(key, value)`` when stored), least recently used dropped first. One entry larger
    than the bound is kept alone, so the newest value is always there."""

    def __init__(self, max_bytes: int,
                 size: Callable[[Hashable, Any], int] = lambda k, v: deep_size((k, v))):
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"max_bytes must be a positive integer, got {max_bytes!r}")
        self.max_bytes, self._size = max_bytes, size
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.nbytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value of ``key`` (now the most recently used), else ``default``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return default
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value`` and drop the oldest entries while over ``max_bytes``."""
        size = int(self._size(key, value))
        with self._lock:
            old = self._entries.pop(key, None)
            self.nbytes += size - (old[1] if old else 0)
            self._entries[key] = (value, size)
            while self.nbytes > self.max_bytes and len(self._entries) > 1:
                self.nbytes -= self._entries.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0


P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Memoised(Protocol, Generic[P, R_co]):
    """What :func:`byte_lru` makes of a function: called as the function; its :class:`ByteLRU`
    ``memo``; ``cache_clear()`` as for ``functools.lru_cache``; ``peek(*args)``: the value
    memoised for these positional arguments, else None, without calling the function."""

    memo: ByteLRU

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def peek(self, *args: Hashable) -> R_co | None: ...

    def cache_clear(self) -> None: ...


def byte_lru(max_bytes: int, size: Callable[[Hashable, Any], int] | None = None
             ) -> Callable[[Callable[P, R]], Memoised[P, R]]:
    """Memoise a function of hashable arguments in a :class:`ByteLRU` (:class:`Memoised`)."""

    def decorate(function: Callable[P, R]) -> Memoised[P, R]:
        memo = ByteLRU(max_bytes, size) if size else ByteLRU(max_bytes)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
            value = memo.get(key, _MISSING)
            if value is _MISSING:
                value = function(*args, **kwargs)
                memo.put(key, value)
            return value

        def peek(*args):
            return memo.get(args)

        vars(wrapper).update(memo=memo, cache_clear=memo.clear, peek=peek)
        return cast(Memoised[P, R], wrapper)

    return decorate
