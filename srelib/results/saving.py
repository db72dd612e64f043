"""Folders that appear whole or not at all: a model saved by one process is never read half
written by another (an interrupted save, or two test workers building the same folder)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable


def save_folder(folder: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(scratch)`` on a hidden sibling of ``folder``, then rename it to ``folder``.

    An existing ``folder`` is written in place (a user's own folder is never replaced). If
    another process made ``folder`` first, its copy is kept and this one dropped. Returns
    ``folder``."""
    folder = Path(folder)
    if folder.exists():
        write(folder)
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = folder.with_name(f".{folder.name}.partial-{os.getpid()}")
    scratch.mkdir()
    try:
        write(scratch)
        try:
            scratch.rename(folder)
        except OSError:
            if not folder.is_dir():  # not a lost race: a real error
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder
