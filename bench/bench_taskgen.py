"""Generated suite: cold generation, cached load, and grading of generated tasks' patches.

Cold: a fresh process generates and admits every candidate into an empty cache folder (wall
seconds, and the CPU seconds of its whole process tree over the 2 cores the target assumes).
Cached: a second fresh process loads the suite from that folder. Grading: unique patches (a
task's reference fix plus a new file, so the memo never has it) of admitted tasks, each of
which must come back applied and fully resolved.

    python bench/bench_taskgen.py --patches 20
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_grading import unique_patch  # noqa: E402
from common import REPO_ROOT, Row, base_parser, median, report  # noqa: E402

GENERATION_TARGET_S = 60.0
GRADE_TARGET_MS = 100.0
CORES = 2
_LOAD = "from srelib.env.tasks.taskgen import generated_suite; s = generated_suite(); print(len(s.tasks))"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_load(env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process tree) of one fresh process loading the suite."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", _LOAD], env=env, check=True, capture_output=True)
    return time.perf_counter() - start, _children_cpu() - cpu


def run(patches: int) -> list[Row]:
    from srelib.env.grading.pipeline import grade_patch
    from srelib.env.tasks.lookup import get_scenario, load_repo
    from srelib.env.tasks.taskgen import generated_suite

    with tempfile.TemporaryDirectory(prefix="srelib-bench-taskgen-") as folder:
        os.environ["SRELIB_CACHE"] = folder
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        cold_wall, cold_cpu = _timed_load(env)
        warm_wall, _ = _timed_load(env)
        suite = generated_suite()
        fixable = [t for t in suite.tasks if get_scenario(t).needs_fix]
        chosen = fixable[:: max(1, len(fixable) // patches)][:patches]
        prefix = time.time_ns()
        grade_ms = []
        for n, task in enumerate(chosen):
            repo = get_scenario(task).repo
            diff = unique_patch(load_repo(repo).fix_diff(task), f"{prefix}_{n}")
            start = time.perf_counter()
            result = grade_patch(repo, task, diff)
            grade_ms.append(1000 * (time.perf_counter() - start))
            if not result["patch_applied"] or result["resolved"] != "full":
                raise RuntimeError(f"the reference fix of {task} did not resolve: {result}")
    grade = median(grade_ms)
    load = os.getloadavg()[0]
    return [
        Row("taskgen", "cold generation (wall)", cold_wall, "s", f"<= {GENERATION_TARGET_S:g} s",
            cold_wall <= GENERATION_TARGET_S, f"{suite.candidates} candidates, load avg {load:.1f}"),
        Row("taskgen", f"cold generation (CPU / {CORES} cores)", cold_cpu / CORES, "s",
            f"<= {GENERATION_TARGET_S:g} s", cold_cpu / CORES <= GENERATION_TARGET_S,
            "the process tree's user+sys seconds"),
        Row("taskgen", "cached load (wall, fresh process)", warm_wall, "s"),
        Row("taskgen", "admitted tasks", len(suite.tasks), "", ">= 200", len(suite.tasks) >= 200,
            f"admission rate {suite.admission_rate:.3f}"),
        Row("taskgen", "grading a generated patch (median)", grade, "ms", f"<= {GRADE_TARGET_MS:g} ms",
            grade <= GRADE_TARGET_MS, f"{len(grade_ms)} unique patches"),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--patches", type=int, default=20, help="unique generated patches to grade")
    args = parser.parse_args(argv)
    rows = run(args.patches)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
