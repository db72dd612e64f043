"""Remake every committed output: the executed notebooks and ``results/`` (``make outputs``).

    python tools/remake_outputs.py

Builds and executes the seven notebooks in place (``tools/build_notebooks.py``), reruns
``srelib demo --out results`` and writes ``results/made_by.json``: the machine class
(CPU kernel level, torch, transformers, Python, processor) and the commit that made them. Run it
after a change that moves a notebook's or the demo's output, then commit what it rewrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_notebooks  # noqa: E402

from srelib.cli import main as srelib_main  # noqa: E402
from srelib.results.provenance import machine_class  # noqa: E402


def commit() -> str | None:
    """The checkout's commit, with ``+changes`` when files differ from it; None outside git."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        return None
    dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head.stdout.strip() + ("+changes" if dirty else "")


def main() -> None:
    made_by = {**machine_class(), "commit": commit()}
    build_notebooks.main([])
    srelib_main(["demo", "--out", str(ROOT / "results"), "--no-progress"])
    (ROOT / "results" / "made_by.json").write_text(json.dumps(made_by, indent=1) + "\n")
    print("wrote results/made_by.json:", made_by)


if __name__ == "__main__":
    main()
