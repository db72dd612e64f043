"""The on-disk cache of generated facts: ``$SRELIB_CACHE/taskgen/<version>-<source digest>/``.

``SRELIB_CACHE`` defaults to ``~/.cache/srelib``. The folder name carries GENERATOR_VERSION and
a digest of the generator's own source, so a changed generator never reads stale entries.
Entries are JSON files written atomically (a temporary file renamed into place), so processes
that generate at the same time never see half a file.

The cache is not trusted. An entry is read only if the folders from the cache root down and the
file itself belong to this user and no one else may write them, and if the file's SHA-256 is
the one :data:`DIGEST_FILE`, in the package, holds for this generator (anyone who can write the
cache can rewrite a digest kept there, but not one in the package). Anything else is skipped
with a warning that names the path and the reason, and the entry is generated afresh: a
tampered cache never changes a grade or a split. An entry the cache lacks is taken from
:data:`ENTRIES_FILE`, in the package, which holds every entry the suite's rebuild made (so a
fresh machine derives nothing the suite already knows), checked against the same digests.
:func:`rebuilding` fills an empty cache and writes both files; ``python -m
srelib.analysis.suite_build`` runs it when it rebuilds the suite.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat
import tempfile
import warnings
from typing import Any
from pathlib import Path
from typing import Callable, Iterator

from srelib.env.tasks.surface import key_id, suite_dir

from .recipes import GENERATOR_VERSION

DIGEST_FILE = Path(__file__).with_name("suite_digest.json")
ENTRIES_FILE = Path(__file__).with_name("suite_entries.json")
# entry name -> the JSON text this process wrote; bounded by the entries (one tests file per
# candidate: ~600 of ~330 bytes)
_WRITTEN: dict[str, str] = {}
# set while :func:`rebuilding` fills a fresh cache: every entry is then derived, none shipped
_DERIVING: list[bool] = []


@functools.lru_cache(maxsize=1)  # no arguments: one short string
def _source_digest() -> str:
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for path in sorted(here.rglob("*.py")):  # the shape modules included
        digest.update(path.relative_to(here).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def generator_key() -> str:
    """This generator: its version and source digest (the cache folder's name), and on a private
    suite the key's id and a digest of its private shape modules."""
    public = f"{GENERATOR_VERSION}-{_source_digest()}"
    return public if suite_dir() is None else f"{public}-{key_id()}-{_private_digest()}"


def _private_digest() -> str:
    from .shape_lib import private_sources

    digest = hashlib.sha256()
    for name, text in private_sources():
        digest.update(name.encode() + b"\0" + text)
    return digest.hexdigest()[:8]


def digest_file() -> Path:
    """The digests this process trusts: :data:`DIGEST_FILE`, or a private suite's."""
    folder = suite_dir()
    return DIGEST_FILE if folder is None else folder / DIGEST_FILE.name


def entries_file() -> Path:
    """The entries shipped beside :func:`digest_file`: :data:`ENTRIES_FILE`, or a private suite's."""
    folder = suite_dir()
    return ENTRIES_FILE if folder is None else folder / ENTRIES_FILE.name


def _root() -> Path:
    return Path(os.environ.get("SRELIB_CACHE") or Path.home() / ".cache" / "srelib")


def cache_dir() -> Path:
    """The cache folder of this generator version (not created here)."""
    return _root() / "taskgen" / generator_key()


@functools.lru_cache(maxsize=1)  # no arguments: one dict, as big as the digest file
def _packaged() -> dict[str, str] | None:
    """The packaged digests of this generator's entries; None if they are for another one."""
    try:
        data = json.loads(digest_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("entries") if data.get("generator") == generator_key() else None


@functools.lru_cache(maxsize=1)  # no arguments: one dict of ~600 small entries (~200 kB)
def _shipped() -> dict[str, str]:
    """The shipped entries' JSON texts by name, for this generator (none for another one)."""
    try:
        data = json.loads(entries_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if data.get("generator") != generator_key():
        return {}
    return {name: json.dumps(value, sort_keys=True) for name, value in data["entries"].items()}


def _distrust(path: Path) -> str | None:
    """Why ``path`` (an entry, or a folder of the cache) may not be trusted, or None."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if info.st_uid != os.geteuid():
        return f"it belongs to uid {info.st_uid}, not to this user ({os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "others may write it (chmod go-w fixes that)"
    return None


def _unverified(name: str, path: Path, data: bytes) -> tuple[str, str] | None:
    """``(kind, why)`` the entry ``name`` read from ``path`` as ``data`` may not be used, or None."""
    for place in [p for p in (path, *path.parents) if p == _root() or _root() in p.parents]:
        problem = _distrust(place)
        if problem:
            return "untrusted", f"{place}: {problem}"
    packaged = _packaged()
    if packaged is None:
        return "stale", (f"{digest_file()} holds no digests for generator {generator_key()} "
                         "(python -m srelib.analysis.suite_build writes them)")
    if packaged.get(name) != hashlib.sha256(data).hexdigest():
        return "tampered", "its content is not what this generator makes (tampered or corrupt)"
    return None


_WARNED: set[str] = set()


def _warn(kind: str, message: str) -> None:
    """Warn ``message`` the first time a problem of ``kind`` is met in this process."""
    if kind not in _WARNED:
        _WARNED.add(kind)
        warnings.warn(message + " (further entries with this problem are skipped silently)",
                      stacklevel=3)


def read(name: str) -> Any:
    """The cached JSON entry ``name`` (a relative path), else the shipped one, or None if
    neither is there or the one found is not verified (see the module doc: a warning says why)."""
    path = cache_dir() / name
    try:
        data = path.read_bytes()
    except OSError:
        return None if _DERIVING else _read_shipped(name)
    problem = _unverified(name, path, data)
    if problem:
        kind, why = problem
        _warn(kind, f"srelib: not using the generated-suite cache entry {path}: {why}; "
                    "generating it afresh")
        return None
    return json.loads(data)


def _read_shipped(name: str) -> Any:
    """The shipped entry ``name`` if its digest is the packaged one, else None."""
    text = _shipped().get(name)
    packaged = _packaged() or {}
    if text is None or packaged.get(name) != hashlib.sha256(text.encode()).hexdigest():
        return None
    return json.loads(text)


def _make_dirs(folder: Path) -> None:
    """Create ``folder`` and missing parents, writable by this user only."""
    if not folder.exists():
        _make_dirs(folder.parent)
        folder.mkdir(mode=0o755)


def write(name: str, value: object) -> None:
    """Store ``value`` as the JSON entry ``name``; a cache that cannot be written is skipped."""
    target = cache_dir() / name
    text = json.dumps(value, sort_keys=True)
    _WRITTEN[name] = text
    try:
        _make_dirs(target.parent)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError:
        pass


def _write_digest_files() -> None:
    """:func:`digest_file` and :func:`entries_file` for what this process wrote."""
    written = dict(sorted(_WRITTEN.items()))
    digests = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in written.items()}
    digest_file().write_text(json.dumps({"generator": generator_key(), "entries": digests}, indent=0,
                                      sort_keys=True) + "\n", encoding="utf-8")
    lines = [f"{json.dumps(name)}: {text}" for name, text in written.items()]
    entries_file().write_text(f'{{"generator": {json.dumps(generator_key())}, "entries": {{\n'
                              + ",\n".join(lines) + "\n}}\n", encoding="utf-8")
    _packaged.cache_clear()
    _shipped.cache_clear()


@contextlib.contextmanager
def rebuilding(fill: Callable[[], object]) -> Iterator[Path]:
    """An empty cache for the ``with`` block (``SRELIB_CACHE``, inherited by worker processes),
    filled by ``fill()`` (every candidate's derived tests), whose entries and their digests are
    written to :data:`ENTRIES_FILE` and :data:`DIGEST_FILE` first, so that workers read them
    back verified. Yields the cache root."""
    before = os.environ.get("SRELIB_CACHE")
    with tempfile.TemporaryDirectory(prefix="srelib-suite-") as fresh:
        os.environ["SRELIB_CACHE"] = fresh
        try:
            _WRITTEN.clear()
            _DERIVING.append(True)
            try:
                fill()
            finally:
                _DERIVING.clear()
            _write_digest_files()
            yield Path(fresh)
        finally:
            del os.environ["SRELIB_CACHE"]
            if before is not None:
                os.environ["SRELIB_CACHE"] = before
