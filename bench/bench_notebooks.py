"""Notebook suite wall time: the whole nbval run, as ``make test`` runs it.

    python bench/bench_notebooks.py
    # runs: python -m pytest -q -n 2 --dist loadfile --nbval --nbval-sanitize-with \
    #       notebooks/sanitize.cfg notebooks
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO_ROOT, Row, base_parser, report  # noqa: E402

TARGET_S = 150.0
COMMAND = ("-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "--nbval",
           "--nbval-sanitize-with", "notebooks/sanitize.cfg", "notebooks")


def notebooks(root: Path = REPO_ROOT) -> list[Path]:
    """The executed notebooks nbval would collect (checkpoints excluded)."""
    return sorted(p for p in (root / "notebooks").glob("**/*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def run(timeout_s: float) -> list[Row]:
    found = notebooks()
    if not found:
        return [Row("notebooks", "nbval suite wall time", "skipped", "", f"<= {TARGET_S:g} s",
                    None, "no notebooks yet")]
    start = time.perf_counter()
    out = subprocess.run([sys.executable, *COMMAND], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=timeout_s)
    wall = time.perf_counter() - start
    summary = (out.stdout.strip().splitlines() or ["no output"])[-1]
    passed = out.returncode == 0
    return [
        Row("notebooks", "nbval suite wall time", wall, "s", f"<= {TARGET_S:g} s",
            passed and wall <= TARGET_S, f"{len(found)} notebooks; pytest: {summary}"),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=900.0, help="give up after this long")
    args = parser.parse_args(argv)
    rows = run(args.timeout)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
