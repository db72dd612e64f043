"""Each sandbox's share of the machine, so that gradings running at once cannot touch each other.

A sandbox takes a *slot* for its whole life (a spare's wait included), one of ``SLOTS`` that
every srelib process on the machine shares through lock files. A slot brings:

- a uid of its own, from ``GRADING_UIDS`` (reserved: no account uses it), when the sandbox
  drops to one (started as root). Per-user limits (``RLIMIT_NPROC``, keyring quotas) then
  count one grading, so a grading that fills its process limit with sleepers leaves the one
  beside it untouched. Without a uid drop every sandbox runs as the caller: there is one slot,
  and gradings run one at a time.
- a cgroup of its own where the machine lets this process write one (cgroup v2 with the
  memory and pids controllers enabled, or v1's memory and pids hierarchies): ``memory.max``
  ``GRADING_MEMORY`` (everything the grading's processes and its tmpfs hold), ``pids.max``
  ``GRADING_PIDS``, and under v2 ``cpu.max`` one CPU. The sandbox's first process joins it
  before it starts anything (:func:`joined`); when the slot is released, whatever is still
  in the cgroup is killed, even a process that left the sandbox's process group.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SLOTS = 64
GRADING_UIDS = range(0x7FFE0000, 0x7FFE0000 + SLOTS)  # 2147352576...: reserved for sandboxes
GRADING_MEMORY = 1 << 30
GRADING_PIDS = 64
_CPU_MAX = "100000 100000"  # v2: one CPU's worth per grading


@dataclass(frozen=True)
class Slot:
    """A held slot: its index, the uid its sandbox runs as (None: the caller's) and the
    ``cgroup.procs`` files its first process writes itself into (none without a cgroup)."""

    index: int
    uid: int | None
    procs: tuple[str, ...]


def _lock_folder() -> Path:
    """Where the slots' lock files live: shared by every srelib process of this user."""
    base = Path("/run") if os.geteuid() == 0 and os.access("/run", os.W_OK) else Path(tempfile.gettempdir())
    folder = base / f"srelib-sandbox-slots-{os.geteuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or folder.stat().st_uid != os.geteuid():
        raise RuntimeError(f"{folder} belongs to another user: the sandbox's slots cannot be held")
    return folder


def acquire(stack: contextlib.ExitStack, uid_drop: bool) -> Slot:
    """Hold a free slot until ``stack`` closes (waiting for one if all are held).

    A free slot whose cgroup still counts processes (killed ones not yet reaped, which count
    against ``pids.max``) is taken only when no other is free, and then once they are gone.

    Args:
        stack: closed when the sandbox has ended; releases the slot.
        uid_drop: does the sandbox drop to a uid (root)? Else there is one slot.
    Returns:
        The slot, its cgroup (if any) set to this grading's limits.
    """
    count = SLOTS if uid_drop else 1
    folder = _lock_folder()
    held, fd = None, -1
    for clean_only in (True, False):
        for index in range(count):
            fd = os.open(folder / f"slot-{index}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if clean_only and _counted(_cgroup(index)):
                os.close(fd)
                continue
            held = index
            break
        if held is not None:
            break
    if held is None:  # all taken: wait for one (the process's own turn in the ring)
        held = os.getpid() % count
        fd = os.open(folder / f"slot-{held}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
    stack.callback(os.close, fd)
    procs = _cgroup(held)
    _clear(procs, reaped=True)  # whatever an earlier holder left behind, gone
    stack.callback(_clear, procs)  # before the slot is released: nothing of it outlives it
    return Slot(held, GRADING_UIDS[held] if uid_drop else None, procs)


def _counted(procs: tuple[str, ...]) -> int:
    """How many processes (exited ones not yet reaped included) the cgroups hold."""
    total = 0
    for path in procs:
        counted = Path(path).with_name("pids.current")
        try:
            total += int(counted.read_text()) if counted.exists() else len(Path(path).read_text().split())
        except (OSError, ValueError):
            continue
    return total


def _clear(procs: tuple[str, ...], reaped: bool = False, wait_s: float = 2.0) -> None:
    """Kill every process in the cgroups whose ``cgroup.procs`` files are ``procs`` (even one
    that left the sandbox's process group or namespace) until none is listed; with ``reaped``,
    also wait until exited ones are reaped (``pids.current``: they count against the next
    holder's ``pids.max``). Gives up after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    for path in procs:
        while time.monotonic() < deadline:
            try:
                pids = [int(pid) for pid in Path(path).read_text().split()]
            except (OSError, ValueError):
                break
            if not pids and not (reaped and _counted((path,))):
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)


def joined(argv: list[str], slot: Slot) -> list[str]:
    """``argv`` started by a shell that first writes itself into ``slot``'s cgroups (so every
    process it starts is in them), or ``argv`` itself where the slot has none."""
    if not slot.procs:
        return argv
    script = ('n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
              'n=$((n - 1)); done; exec "$@"')
    return ["/bin/sh", "-c", script, "sh", str(len(slot.procs)), *slot.procs, *argv]


@functools.lru_cache(maxsize=SLOTS)  # made and set once per process
def _cgroup(index: int) -> tuple[str, ...]:
    """The ``cgroup.procs`` files of slot ``index``'s cgroups, made and set to the limits;
    none where this machine does not let us."""
    folders = []
    for kind, base in _hierarchies():
        folder = base / f"slot-{index}"
        try:
            folder.mkdir(exist_ok=True)
            for name, value in _LIMIT_FILES[kind]:
                if (folder / name).exists():
                    (folder / name).write_text(value)
                elif name in _REQUIRED:
                    return ()
        except OSError:
            return ()
        folders.append(str(folder / "cgroup.procs"))
    return tuple(folders)


_REQUIRED = ("memory.max", "pids.max", "memory.limit_in_bytes")
_LIMIT_FILES = {
    "v2": [("memory.max", str(GRADING_MEMORY)), ("memory.swap.max", "0"),
           ("pids.max", str(GRADING_PIDS)), ("cpu.max", _CPU_MAX)],
    "memory": [("memory.limit_in_bytes", str(GRADING_MEMORY)),
               ("memory.memsw.limit_in_bytes", str(GRADING_MEMORY))],
    "pids": [("pids.max", str(GRADING_PIDS))],
}


@functools.lru_cache(maxsize=1)
def _hierarchies() -> tuple[tuple[str, Path], ...]:
    """``(kind, parent folder)`` of the cgroups this process can make sandboxes' cgroups in:
    ``("v2", folder)`` alone, or v1's ``("memory", ...)`` and ``("pids", ...)``, or none."""
    mounts = _mounts()
    own = _own_cgroups()
    v2 = mounts.get("cgroup2")
    if v2 is not None and {"memory", "pids"} <= _v2_controllers(v2 / own.get("", "/").lstrip("/")):
        parent = v2 / own.get("", "/").lstrip("/") / "srelib-sandbox"
        if _usable(parent, "+memory +pids"):
            return (("v2", parent),)
    found = []
    for kind in ("memory", "pids"):
        mount = mounts.get(kind)
        if mount is None:
            return ()
        parent = mount / own.get(kind, "/").lstrip("/") / "srelib-sandbox"
        if not _usable(parent, None):
            return ()
        found.append((kind, parent))
    return tuple(found)


def _usable(parent: Path, enable: str | None) -> bool:
    """Can this process make ``parent`` (with the controllers ``enable`` turned on for its
    children, under v2) and a child in it?"""
    try:
        parent.mkdir(exist_ok=True)
        if enable is not None:
            (parent / "cgroup.subtree_control").write_text(enable)
        probe = parent / f"probe-{os.getpid()}"
        probe.mkdir(exist_ok=True)
        probe.rmdir()
        return True
    except OSError:
        return False


def _v2_controllers(folder: Path) -> set[str]:
    try:
        return set((folder / "cgroup.controllers").read_text().split())
    except OSError:
        return set()


def _lines(path: str) -> list[str]:
    """The lines of a ``/proc`` file; none where it cannot be read."""
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def _mounts() -> dict[str, Path]:
    """``{"cgroup2" or a v1 controller: its mount point}`` from ``/proc/self/mounts``."""
    found: dict[str, Path] = {}
    for line in _lines("/proc/self/mounts"):
        fields = line.split()
        if len(fields) < 4:
            continue
        if fields[2] == "cgroup2":
            found.setdefault("cgroup2", Path(fields[1]))
        elif fields[2] == "cgroup":
            for option in fields[3].split(","):
                if option in ("memory", "pids"):
                    found.setdefault(option, Path(fields[1]))
    return found


def _own_cgroups() -> dict[str, str]:
    """``{controller ("" for v2): this process's cgroup path}`` from ``/proc/self/cgroup``."""
    found: dict[str, str] = {}
    for line in _lines("/proc/self/cgroup"):
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found
