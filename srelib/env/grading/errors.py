"""Failures of the grader, as opposed to verdicts on a patch.

A :class:`GradingError` says that the grader could not run: the disk it applies patches on is
full, the sandbox could not start or was killed before the tests started, the machinery ran
out of time before any test ran, a tool it needs is missing. It is never a verdict: patch
grading never memoises it and tries once more before raising it
(:func:`srelib.env.grading.pipeline.grade_diff`); an episode that meets it ends without a score and
records it (``info["grading_error"]``, :meth:`GradingError.record`), and a resumed run grades it
again. What the patched code does (crash, hang, exhaust its own quota or memory) stays a verdict.
"""

from __future__ import annotations

import errno

#: Kinds of grader failure.
KINDS = ("no_space", "sandbox_failed", "sandbox_killed", "machinery_timeout", "missing_tool")
#: errnos that mean the machine, not the patch, ran out of something.
RESOURCE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EMFILE,
                             errno.ENFILE, errno.EAGAIN})


class GradingError(RuntimeError):
    """The grader could not run (module doc): ``kind`` (one of :data:`KINDS`) and why."""

    def __init__(self, kind: str, message: str, attempts: int = 1) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown grading error kind {kind!r}; valid: {list(KINDS)}")
        super().__init__(f"{kind}: {message}")
        self.kind, self.message, self.attempts = kind, message, attempts

    def record(self) -> dict:
        """The error as JSON data: ``{"kind", "message", "attempts"}``."""
        return {"kind": self.kind, "message": self.message, "attempts": self.attempts}


def from_os_error(exc: OSError, doing: str) -> GradingError:
    """The :class:`GradingError` for an ``OSError`` the grader met while ``doing`` something."""
    kind = "missing_tool" if isinstance(exc, FileNotFoundError) else (
        "no_space" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "sandbox_failed")
    return GradingError(kind, f"{doing}: {exc}")
