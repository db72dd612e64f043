"""Worker processes that do not outlive the process that started them.

``evaluate(workers=N)`` runs episodes in a :func:`process_pool`. Each worker, as it starts,
arranges to exit when its parent dies (even by SIGKILL, when no cleanup code can run): on Linux
through ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, elsewhere through a thread that watches the
parent's pid.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
WATCH_INTERVAL_S = 0.5


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` processes that exit when this process dies."""
    return ProcessPoolExecutor(max_workers=workers, initializer=exit_with_parent,
                               initargs=(os.getpid(),))


def exit_with_parent(parent_pid: int, *, use_prctl: bool = sys.platform.startswith("linux")) -> None:
    """Make this process exit when ``parent_pid``, its parent, dies."""
    if use_prctl and _set_parent_death_signal():
        if os.getppid() != parent_pid:  # the parent died before the signal was armed
            os._exit(1)
        return
    thread = threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True,
                              name="srelib-parent-watch")
    thread.start()


def _set_parent_death_signal() -> bool:
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCH_INTERVAL_S)
    os._exit(1)
