"""One sandboxed process from start to end: started, fed its input, waited for and ended.

:mod:`srelib.env.grading.sandbox.isolate` builds the command for an isolation level; :func:`start` runs it with
its input still to come, so a caller can start a sandbox ahead of the work it will do (see
:mod:`srelib.env.grading.sandbox.spare`), and :meth:`Started.finish` writes that input, waits up to a wall
timeout that starts then, kills whatever the command left running and returns its output.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

OUTPUT_BYTES = 1 << 20


@dataclass(frozen=True)
class SandboxResult:
    """What an isolated run did: exit status (negative: killed by that signal), its output
    (each capped at ``OUTPUT_BYTES``), whether the wall timeout ended it, and the level."""

    returncode: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    isolation: str


class Started:
    """A sandboxed command running, waiting for its standard input (see :func:`start`)."""

    def __init__(self, command: list[str], *, cwd: str, env: dict[str, str], level: str,
                 info_pipe: tuple[int, int] | None, stack: contextlib.ExitStack) -> None:
        self.level, self._stack = level, stack
        self._out, self._err = (stack.enter_context(tempfile.TemporaryFile()) for _ in range(2))
        info_read, info_write = info_pipe or (None, None)
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=self._out,
                                         stderr=self._err, cwd=cwd, env=env, start_new_session=True,
                                         close_fds=True,
                                         pass_fds=() if info_write is None else (info_write,))
        except BaseException:
            stack.close()
            raise
        finally:
            if info_write is not None:
                os.close(info_write)
        if info_read is not None:
            stack.callback(os.close, info_read)
        self._init = _namespace_init(info_read) if info_read is not None else None

    def alive(self) -> bool:
        """Has the command not exited yet?"""
        return self.proc.poll() is None

    def finish(self, stdin: bytes, timeout_s: float) -> SandboxResult:
        """Write ``stdin``, wait until the command exits or ``timeout_s`` passes, end every
        process it started and return what it wrote. Never raises for what the command did."""
        deadline = time.monotonic() + timeout_s
        with self._stack:
            try:
                _feed(self.proc.stdin, stdin, deadline)
                timed_out = not _wait_for_exit(self.proc, max(0.0, deadline - time.monotonic()))
            finally:
                self._end()
            return SandboxResult(self.proc.returncode, _read(self._out), _read(self._err),
                                 timed_out, self.level)

    def discard(self) -> None:
        """End the command unused, and every process it started; free what it held."""
        with self._stack:
            self._end()

    def _end(self) -> None:
        init, self._init = self._init, None
        if init is not None:  # every process it started is in that namespace
            _end_namespace(init)
        _end_group(self.proc, wait=init is None)
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # pyright: ignore[reportOptionalMemberAccess] - stdin=PIPE


def _feed(pipe, data: bytes, deadline: float) -> None:
    """Write ``data`` to ``pipe`` and close it, giving up at ``deadline`` or when the reader
    has gone (a command need not read its input). SIGPIPE is held back in this thread while it
    writes: where a program restored its default, a reader gone would kill the caller."""
    fd, view = pipe.fileno(), memoryview(data)
    os.set_blocking(fd, False)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
    try:
        with contextlib.suppress(BrokenPipeError):
            while view:
                if not select.select([], [fd], [], max(0.0, deadline - time.monotonic()))[1]:
                    return
                with contextlib.suppress(BlockingIOError):
                    view = view[os.write(fd, view):]
            pipe.close()
    finally:
        if signal.SIGPIPE not in mask:
            signal.sigtimedwait({signal.SIGPIPE}, 0)  # drop the one a gone reader raised, if any
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _wait_for_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until ``proc`` exits or ``timeout_s`` passes; True if it exited.

    A pidfd wakes us the moment the process exits (Linux 5.3+); Popen.wait polls with sleeps
    of up to 50 ms, a large part of a grading's wall time.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None
    if fd is None:
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)
    return proc.poll() is not None


def _namespace_init(info_read: int) -> int | None:
    """A pidfd of the sandbox's PID-namespace init, whose pid bubblewrap reports as JSON on
    ``--info-fd`` (in several writes); opened while bubblewrap, its parent, still holds it."""
    text, deadline = b"", time.monotonic() + 5.0
    while select.select([info_read], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = os.read(info_read, 4096)
        text += chunk
        try:
            return os.pidfd_open(int(json.loads(text)["child-pid"]))
        except ValueError:
            if not chunk:
                return None
        except (OSError, KeyError, TypeError):
            return None
    return None


def _end_namespace(init: int) -> None:
    """Kill the PID namespace's init, and so every process in it; return once they are gone
    (the kernel reaps the namespace before the init counts as exited)."""
    try:
        signal.pidfd_send_signal(init, signal.SIGKILL)
        select.select([init], [], [], 5.0)
    except OSError:
        pass
    finally:
        os.close(init)


def _end_group(proc: subprocess.Popen, wait: bool = True) -> None:
    """Kill ``proc``'s process group, reap ``proc`` and (``wait``) wait up to 1 s until the
    group is gone."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    deadline = time.monotonic() + (1.0 if wait else 0.0)
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except OSError:
            return
        time.sleep(0.002)


def _read(file) -> bytes:
    file.seek(0)
    return file.read(OUTPUT_BYTES)
