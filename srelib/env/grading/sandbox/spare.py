"""A sandbox started before the grading that will use it, so that grading does not wait for one.

Every patch grading runs its probes in a fresh sandbox (:func:`srelib.env.grading.sandbox.isolate.prepare`).
Starting one (bubblewrap's namespaces, the interpreter, the probe runner's imports) costs about
as much as the rest of a grading, and none of it depends on the patch. So this module keeps one
sandbox started ahead, per process: :func:`take` hands it to a grading and asks a background
thread to start the next one. Each sandbox still serves exactly one grading and is ended with
it, so isolation is what a sandbox started on demand gives. A spare that does not fit (another
level or timeout) is ended and one is started on demand instead.

``SRELIB_SPARE_SANDBOX=0`` turns it off (every grading starts its own sandbox, as before);
a process that forks forgets its parent's spare in the child. The spare is ended when the
process exits, multiprocessing's workers (which skip ``atexit``) included.
"""

from __future__ import annotations

import atexit
import multiprocessing.util
import os
import threading
from typing import Callable, Hashable, cast

from srelib.env.grading.sandbox.process import Started

SPARE_ENV = "SRELIB_SPARE_SANDBOX"

Launch = Callable[[], Started]

_lock = threading.Condition()
_spare: tuple[Hashable, Started] | None = None
_wanted: tuple[Hashable, Launch] | None = None
_starting: Hashable | None = None  # the key of the spare being started, if one is
_starter: threading.Thread | None = None
_closed = False  # the process is exiting: no spare is kept any more
WAIT_S = 1.0  # how long a grading waits for a spare being started before starting its own
CLOSE_WAIT_S = 5.0  # how long an exiting process waits for a spare being started, to end it


def enabled() -> bool:
    """Does grading keep a spare sandbox (``SPARE_ENV`` is not ``0``)?"""
    return os.environ.get(SPARE_ENV, "1").strip() != "0"


def take(key: Hashable, launch: Launch, now: Launch | None = None) -> Started:
    """A started sandbox for ``key``: the spare if it was started for ``key`` and still runs
    (waiting up to ``WAIT_S`` for one being started), else one started now by ``now`` (by
    default ``launch``). Then ``launch`` starts a spare for ``key`` in the background for the
    next call (it may prepare more than a sandbox started on demand needs)."""
    global _spare, _wanted
    now = now or launch
    if not enabled() or _closed:
        return now()
    with _lock:
        _lock.wait_for(lambda: _spare is not None or _starting != key, timeout=WAIT_S)
        spare, _spare = _spare, None
        _wanted = (key, launch)
        _ensure_starter()
        _lock.notify_all()
    if spare is not None and spare[0] == key and spare[1].alive():
        return spare[1]
    if spare is not None:
        spare[1].discard()
    return now()


def _ensure_starter() -> None:
    global _starter
    if _starter is None or not _starter.is_alive():
        _starter = threading.Thread(target=_start_spares, name="srelib-spare-sandbox", daemon=True)
        _starter.start()
        multiprocessing.util.Finalize(None, _close, exitpriority=0)  # a worker's exit, as atexit


def _start_spares() -> None:
    """Start each wanted spare. One long-lived thread starts them all: bubblewrap dies with the
    thread that started it, and a grading's own thread may end before the spare is used."""
    global _spare, _wanted, _starting
    while True:
        with _lock:
            _lock.wait_for(lambda: _wanted is not None)
            (key, launch), _wanted = cast("tuple[Hashable, Launch]", _wanted), None  # set: waited
            old, _spare, _starting = _spare, None, key
        if old is not None:
            old[1].discard()
        try:
            started = (key, launch())
        except Exception:  # noqa: BLE001 - a grading starts its own sandbox and reports why
            started = None
        with _lock:  # at exit, _close() waits for this and ends it
            old, _spare, _starting = _spare, started, None
            _lock.notify_all()
        if old is not None:
            old[1].discard()


def discard() -> None:
    """End the spare now, if there is one (the next grading starts its own)."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is not None:
        spare[1].discard()


def _close() -> None:
    """At exit: end the spare, and the one being started once it is (up to ``CLOSE_WAIT_S``)."""
    global _closed, _wanted
    with _lock:
        _closed, _wanted = True, None
        _lock.wait_for(lambda: _starting is None, timeout=CLOSE_WAIT_S)
    discard()


def _forget_in_child() -> None:
    """After a fork, in the child: the parent's spare and starter thread are not ours."""
    global _lock, _spare, _wanted, _starting, _starter, _closed
    _lock, _spare, _wanted, _starting, _starter = threading.Condition(), None, None, None, None
    _closed = False


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_close)
