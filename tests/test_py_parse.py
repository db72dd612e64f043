"""Parsing Python on several threads at once (srelib.env.support.ast_parse): a served session's patch
steps and concurrent gradings parse on worker threads."""

from __future__ import annotations

import gc
import sys
import threading

from srelib.env.support.ast_parse import parse

NESTED = ("x = " + "[" * 30 + "1" + "]" * 30 + "\n") * 60


class _Finalised:
    """Garbage whose finaliser runs Python code, so a collection can switch threads."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))


def test_parsing_on_six_threads_while_finalisers_run_never_fails():
    """CPython's shared conversion depth (gh-106905) made about half of these parses raise
    ``SystemError: AST constructor recursion depth mismatch`` through bare ``ast.parse`` on
    3.11.7."""
    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(50, 1, 1)
    failures: list[BaseException] = []

    def work() -> None:
        for _ in range(20):
            try:
                parse(NESTED)
            except SystemError as exc:
                failures.append(exc)
            _Finalised()

    try:
        threads = [threading.Thread(target=work) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
        gc.collect()
    assert failures == []
