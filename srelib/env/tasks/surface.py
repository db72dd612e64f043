"""The suite key, and the surface an episode shows of a task's commits.

**The suite key.** Every value the generator draws (sites' histories, numbers, stories,
hashes) and every opaque task id is derived from the task's name *and* a suite key. The public
suite's key, :data:`PUBLIC_KEY`, is written here, so anyone holding srelib rebuilds it: it is
for development. A lab that publishes numbers keeps its own key in a file and points
``SRELIB_SUITE_KEY`` at it (``srelib tasks build --key FILE`` builds that suite): without the
file, a policy that embeds srelib cannot recompute one value of the keyed suite. The key is
read once per process (:func:`suite_key`); worker processes inherit the variable.

**The episode's surface.** A task's repository is static, but what an episode shows of its
commits (their shas, the minutes of their dates, their authors' names), and the shas and
authors of the deploys that ship them, are drawn by :class:`EpisodeSurface` from the suite
key, the episode's seed and the task: the same task, seed and key show the same bytes, another
seed other shas, so no table built over the task list reads the task off a hash.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import os
import random
from datetime import datetime, timedelta
from pathlib import Path

from srelib.env.simulation.deploy_notes import AUTHORS

#: The public suite's key: written here on purpose (see the module doc).
PUBLIC_KEY = b"srelib public suite, v1"
#: The variable naming a private suite's key file.
KEY_VARIABLE = "SRELIB_SUITE_KEY"
#: The variable naming a private suite's folder (default: the key file's name + ``.suite``):
#: its ``suite.json``, ``suite_digest.json`` and ``shapes/`` (its private shape and family
#: modules), written by ``srelib tasks build --key FILE``.
DIR_VARIABLE = "SRELIB_SUITE_DIR"
MIN_KEY_BYTES = 16
_SHA_DIGITS = 7
MAX_JITTER_MIN = 45  # the most minutes an episode moves a commit date


def read_key_file(path: str | os.PathLike) -> bytes:
    """The key held in the file ``path`` (its bytes, a trailing newline dropped).

    Raises:
        ValueError: the file cannot be read or holds fewer than :data:`MIN_KEY_BYTES` bytes.
    """
    try:
        key = Path(path).read_bytes().rstrip(b"\r\n")
    except OSError as exc:
        raise ValueError(f"suite key file {str(path)!r} cannot be read ({exc.strerror})") from None
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"suite key file {str(path)!r} holds {len(key)} bytes; a key needs at "
                         f"least {MIN_KEY_BYTES} (e.g. `head -c 32 /dev/urandom > FILE`)")
    return key


@functools.lru_cache(maxsize=1)  # no arguments: the process's one key
def suite_key() -> bytes:
    """This process's suite key: the file ``SRELIB_SUITE_KEY`` names, else :data:`PUBLIC_KEY`."""
    path = os.environ.get(KEY_VARIABLE)
    return read_key_file(path) if path else PUBLIC_KEY


def suite_dir() -> Path | None:
    """The private suite's folder (see :data:`DIR_VARIABLE`); None on the public suite."""
    if is_public():
        return None
    folder = os.environ.get(DIR_VARIABLE)
    return Path(folder) if folder else Path(os.environ[KEY_VARIABLE] + ".suite")


def is_public(key: bytes | None = None) -> bool:
    """Is ``key`` (default: this process's) the public suite's?"""
    return (suite_key() if key is None else key) == PUBLIC_KEY


def key_id(key: bytes | None = None) -> str:
    """A name for ``key`` (default: this process's) that tells suites apart and reveals nothing
    of it: ``"public"``, or 12 hex digits of a hash of the key."""
    key = suite_key() if key is None else key
    return "public" if key == PUBLIC_KEY else hashlib.sha256(b"srelib key id\0" + key).hexdigest()[:12]


def keyed(text: str, key: bytes | None = None) -> bytes:
    """HMAC-SHA256 of ``text`` under ``key`` (default: this process's suite key)."""
    return hmac.new(suite_key() if key is None else key, text.encode(), hashlib.sha256).digest()


class EpisodeSurface:
    """What one episode (``key``, ``seed``, ``task``) shows of commit shas, dates and authors.

    Args:
        key: the suite key.
        seed: the episode's seed.
        task: the task's name.
    """

    def __init__(self, key: bytes, seed: int, task: str) -> None:
        self._prefix = f"surface\0{seed}\0{task}\0"
        self._key = key
        order = list(AUTHORS)
        random.Random(keyed(self._prefix + "authors", key)).shuffle(order)
        self._authors: dict[str, str] = dict(zip(AUTHORS, order))

    def sha(self, canonical: str) -> str:
        """The sha this episode shows for the commit (or deploy) ``canonical``."""
        return keyed(self._prefix + "sha\0" + canonical, self._key).hex()[:_SHA_DIGITS]

    def author(self, name: str | None) -> str | None:
        """The name this episode shows for ``name`` (the stock authors are permuted)."""
        return self._authors.get(name, name) if name else name

    def dates(self, dates: list[str]) -> list[str]:
        """``dates`` (ISO, oldest first), each moved by up to a third of the gap to its
        neighbours (at most :data:`MAX_JITTER_MIN` minutes), so their order holds."""
        when = [datetime.fromisoformat(d.replace("Z", "+00:00")) for d in dates]
        rng = random.Random(keyed(self._prefix + "dates", self._key))
        out = []
        for k, t in enumerate(when):
            gaps = [abs((when[j] - t).total_seconds()) // 60 for j in (k - 1, k + 1) if 0 <= j < len(when)]
            reach = int(min([MAX_JITTER_MIN * 3, *gaps]) // 3)
            moved = t + timedelta(minutes=rng.randint(-reach, reach)) if reach else t
            out.append(moved.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return out

    def commits(self, commits: tuple) -> tuple:
        """``commits`` (:class:`~srelib.env.phase2.repos.Commit`, newest first) as this episode shows
        them: shas, dates and authors drawn (see the class doc)."""
        dates = self.dates([c.date for c in reversed(commits)])[::-1]
        return tuple(dataclasses.replace(c, sha=self.sha(c.sha), date=d, author=self.author(c.author))
                     for c, d in zip(commits, dates))

    def scenario(self, scenario):
        """``scenario`` with the shas and authors of its scripted deploys as this episode shows
        them (a deploy note that quotes its sha quotes the shown one)."""
        def shown(d):
            if d.sha is None:
                return dataclasses.replace(d, author=self.author(d.author))
            sha = self.sha(d.sha)
            return dataclasses.replace(d, sha=sha, author=self.author(d.author),
                                       description=d.description.replace(d.sha, sha))
        deploys = tuple((svc, tuple(shown(d) for d in specs)) for svc, specs in scenario.deploys)
        bad = self.sha(scenario.bad_commit) if scenario.bad_commit else None
        return dataclasses.replace(scenario, deploys=deploys, bad_commit=bad)
