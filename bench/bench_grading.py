"""Patch grading latency: a unique patch (memo miss) against a memoised hit.

Each unique patch is a task's reference fix plus a new file with a unique name, so the memo
never has it: grading applies it to a clean copy and runs the task's hidden tests in the
sandboxed subprocess. A hit re-grades a patch already graded. The tasks with a fix are cycled;
every graded patch must come back applied and fully resolved, or the run fails. One
untimed grading first starts whatever the grader starts once per process.

The floor is measured in the same run, alternating with the misses: a bare ``bwrap`` (new
namespaces, ``/usr`` read-only) starting the sandbox's interpreter on ``pass``, and the same
empty interpreter through :func:`srelib.env.sandbox.run_isolated` (the grader's whole sandbox:
limits, uid drop, scratch copy). A miss can get no faster than the first.

    python bench/bench_grading.py --patches 30 --hits 2000
    python bench/bench_grading.py --patches 10 --profile 20
"""

from __future__ import annotations

import itertools
import os
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, median, profile_text, report  # noqa: E402

MISS_TARGET_MS = 25.0
HIT_TARGET_MS = 1.0


def unique_patch(fix_diff: str, tag: str) -> str:
    """``fix_diff`` plus a hunk creating ``bench_note_<tag>.txt``: same repair, new memo key."""
    note = (f"diff --git a/bench_note_{tag}.txt b/bench_note_{tag}.txt\nnew file mode 100644\n"
            f"--- /dev/null\n+++ b/bench_note_{tag}.txt\n@@ -0,0 +1 @@\n+unique patch {tag}\n")
    return fix_diff + note


def fixable_tasks() -> list[tuple[str, str, str]]:
    """(task, repo, reference fix diff) for every task whose scenario needs a fix."""
    import srelib
    from srelib.env.lookup import load_repo

    out = []
    for task in srelib.TASKS:
        scenario = srelib.get_scenario(task)
        if scenario.needs_fix:
            out.append((task, scenario.repo, load_repo(scenario.repo).fix_diff(task)))
    return out


def _graded(result: dict, what: str) -> None:
    if not result["patch_applied"] or result["resolved"] != "full":
        raise RuntimeError(f"{what} did not grade as an applied full fix: {result}")


def floor_calls():
    """``{name: call}``: the two empty-interpreter starts of the module doc."""
    import shutil
    import subprocess
    import tempfile

    from srelib.env import sandbox

    empty = [sandbox.python(), "-I", "-S", "-B", "-c", "pass"]
    bare = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent",
            "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"]
    for top in ("/bin", "/lib", "/lib64"):
        bare += ["--symlink", os.readlink(top), top] if os.path.islink(top) else \
            (["--ro-bind", top, top] if os.path.isdir(top) else [])
    prefix = os.path.realpath(sys.base_prefix)
    if not prefix.startswith("/usr"):
        bare += ["--ro-bind", prefix, prefix]
    scratch = Path(tempfile.mkdtemp(prefix="srelib-floor-"))
    scratch.chmod(0o755)
    return {"bare bwrap + interpreter": lambda: subprocess.run(bare + ["--"] + empty, check=True),
            "run_isolated empty interpreter":
                lambda: sandbox.run_isolated(empty, scratch, timeout_s=10)}


def run(patches: int, hits: int) -> list[Row]:
    from srelib.env.patching import grade_patch
    from srelib.env.sandbox import isolation_level

    floors = floor_calls()
    floor_ms: dict[str, list[float]] = {name: [] for name in floors}

    prefix = time.time_ns()  # names no earlier run used, should the memo outlive the process
    cases = fixable_tasks()
    task, repo, fix = cases[0]
    _graded(grade_patch(repo, task, unique_patch(fix, f"{prefix}_warm")), "the warm-up patch")
    miss_ms = []
    for n, (task, repo, fix) in zip(range(patches), itertools.cycle(cases)):
        diff = unique_patch(fix, f"{prefix}_{n}")
        start = time.perf_counter()
        result = grade_patch(repo, task, diff)
        miss_ms.append(1000 * (time.perf_counter() - start))
        _graded(result, f"unique patch {n} ({task})")
        for name, call in floors.items():
            start = time.perf_counter()
            call()
            floor_ms[name].append(1000 * (time.perf_counter() - start))
    warm = unique_patch(fix, f"{prefix}_hit")
    _graded(grade_patch(repo, task, warm), "the memo-hit patch")
    hit_ms = []
    for _ in range(hits):
        start = time.perf_counter()
        grade_patch(repo, task, warm)
        hit_ms.append(1000 * (time.perf_counter() - start))
    miss, hit = median(miss_ms), median(hit_ms)
    deciles = statistics.quantiles(miss_ms, n=10) if len(miss_ms) > 1 else miss_ms
    return [
        Row("grading", "unique patch (miss) median", miss, "ms", f"<= {MISS_TARGET_MS:g} ms",
            miss <= MISS_TARGET_MS,
            f"{patches} patches over {len(cases)} tasks, sandbox {isolation_level()}"),
        Row("grading", "unique patch (miss) p90", deciles[-1], "ms"),
        *(Row("grading", f"floor: {name} median", median(times), "ms",
              note=f"the miss is {miss / median(times):.2f}x this; same run, alternating")
          for name, times in floor_ms.items()),
        Row("grading", "memoised hit median", hit, "ms", f"<= {HIT_TARGET_MS:g} ms",
            hit <= HIT_TARGET_MS, f"{hits} calls"),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--patches", type=int, default=30, help="unique patches to grade")
    parser.add_argument("--hits", type=int, default=2000, help="memoised re-grades to time")
    parser.add_argument("--profile", type=int, metavar="TOP",
                        help="instead, cProfile the misses and print the TOP functions")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile_text(lambda: run(args.patches, 1), args.profile))
        return []
    rows = run(args.patches, args.hits)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
