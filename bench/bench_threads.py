"""Two torch processes on this machine's cores: one OpenMP thread each, or torch's default.

    python bench/bench_threads.py [--repeats 3]

`make test` runs two test processes (pytest-xdist) on two cores, and the root conftest.py
sets ``OMP_NUM_THREADS=1`` for them. This measures why: two processes each train the tiny chat
model from scratch at once, side by side under both settings, and the wall time of the pair
is compared (medians over the repeats, the two settings alternating).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, median, report  # noqa: E402

#: The tiny model's training from scratch (its 150 optimiser steps), never its cached copy.
BUILD = ("from srelib.training.tiny_model import TRAIN_STEPS, VOCAB_SIZE, _build_model, _corpus, "
         "chat_tokenizer; _build_model(chat_tokenizer(_corpus(), VOCAB_SIZE), TRAIN_STEPS)")


def pair_wall(threads: str | None) -> float:
    """Seconds for two concurrent builds with ``OMP_NUM_THREADS=threads`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if threads:
        env["OMP_NUM_THREADS"] = threads
    with tempfile.TemporaryDirectory(prefix="srelib-threads-") as scratch:
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", BUILD], env=env, cwd=scratch)
                 for _ in range(2)]
        if any(p.wait() for p in procs):
            raise RuntimeError("a tiny model build failed")
        return time.perf_counter() - start


def run(repeats: int) -> list[Row]:
    walls: dict[str, list[float]] = {"1": [], "default": []}
    for _ in range(repeats):
        walls["1"].append(pair_wall("1"))
        walls["default"].append(pair_wall(None))
    one, default = median(walls["1"]), median(walls["default"])
    cores = os.cpu_count()
    return [Row("threads", "2 builds at once, 1 thread each", one, "s"),
            Row("threads", "2 builds at once, torch's default threads", default, "s"),
            Row("threads", "default / 1 thread", default / one, "x", note=f"{cores} cores")]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = run(args.repeats)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
