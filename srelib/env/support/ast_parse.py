"""``ast.parse`` that is safe on several threads at once.

CPython keeps the depth of its conversion of a parsed tree to Python objects in one counter per
interpreter (gh-106905). When another thread runs mid-conversion (a garbage collection that
runs a finaliser is enough to switch), both move the counter and the parse fails with
``SystemError: AST constructor recursion depth mismatch``: reproduced on this machine's 3.11.7 with
six threads parsing while finalisers run (``tests/test_py_parse.py``). srelib parses Python on
worker threads (a served session's patch steps, concurrent gradings, a policy's parser), so
every parse in srelib takes this lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_LOCK = threading.Lock()


@overload
def parse(source: str | bytes, mode: Literal["exec"] = "exec") -> ast.Module: ...
@overload
def parse(source: str | bytes, mode: Literal["eval"]) -> ast.Expression: ...


def parse(source: str | bytes, mode: str = "exec") -> ast.AST:
    """``ast.parse(source, mode=mode)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, mode=mode)
