"""Patch grading latency: a unique patch (memo miss) against a memoised hit.

Each unique patch is a task's reference fix plus a new file with a unique name, so the memo
never has it: grading applies it to a clean copy and runs the task's hidden tests in a fresh
sandboxed subprocess. A hit re-grades a patch already graded. The tasks with a fix are cycled;
every graded patch must come back applied and fully resolved, or the run fails. One untimed
grading first starts whatever the grader starts once per process.

Grading takes a sandbox started ahead (:mod:`srelib.env.grading.sandbox.spare`); the misses alternate with and
without it (``SRELIB_SPARE_SANDBOX=0``: each grading starts its own, as before), in the same
run. The floor is measured alternating with them too: a bare ``bwrap`` (new namespaces,
``/usr`` read-only) starting the sandbox's interpreter on ``pass``, and the same empty
interpreter through :func:`srelib.env.grading.sandbox.isolate.run_isolated` (the grader's whole sandbox:
limits, uid drop, scratch copy). A grading without a spare can get no faster than the first.

The spare is started while the grader waits; back to back (``--burst`` gradings with no pause
between them) it must still be ready in time, and the CPU one grading costs (this process and
its children, spare included) shows what it takes: both are measured with and without it.

    python bench/bench_grading.py --patches 30 --hits 2000
    python bench/bench_grading.py --patches 10 --profile 20
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
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
    from srelib.env.tasks.lookup import load_repo

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

    from srelib.env.grading.sandbox import isolate as sandbox

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


@contextlib.contextmanager
def spare_sandbox(on: bool):
    """Grade with (``on``) or without the spare sandbox, restoring the setting after."""
    from srelib.env.grading.sandbox import spare

    before = os.environ.get(spare.SPARE_ENV)
    os.environ[spare.SPARE_ENV] = "1" if on else "0"
    try:
        yield
    finally:
        spare.discard()
        os.environ.pop(spare.SPARE_ENV) if before is None else os.environ.update({spare.SPARE_ENV: before})


def cpu_s() -> float:
    """CPU seconds of this process and of its children reaped so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Grader:
    """Grades a new unique patch at each call; checks every result."""

    def __init__(self, prefix: str):
        self.cases, self.prefix, self.count = fixable_tasks(), prefix, itertools.count()

    def __call__(self, case: int) -> float:
        """Grade one for the task ``case`` (cycling the tasks); its wall milliseconds."""
        from srelib.env.grading.pipeline import grade_patch

        n = next(self.count)
        task, repo, fix = self.cases[case % len(self.cases)]
        start = time.perf_counter()
        result = grade_patch(repo, task, unique_patch(fix, f"{self.prefix}_{n}"))
        elapsed = 1000 * (time.perf_counter() - start)
        _graded(result, f"unique patch {n} ({task})")
        return elapsed


def burst(grade: Grader, count: int, on: bool) -> tuple[list[float], float]:
    """``count`` gradings back to back, cycling the tasks: their wall ms and the CPU ms per
    grading."""
    with spare_sandbox(on):
        grade(-1)  # the spare for the first is started in the background, like every later one
        cpu = cpu_s()
        times = [grade(case) for case in range(count)]
    return times, 1000 * (cpu_s() - cpu) / count


def run(patches: int, hits: int, bursts: int = 20) -> list[Row]:
    from srelib.env.grading.pipeline import grade_patch
    from srelib.env.grading.sandbox.isolate import isolation_level

    floors = floor_calls()
    modes = {"with a spare sandbox": True, "without (each starts its own)": False}
    miss_ms: dict[str, list[float]] = {name: [] for name in modes}
    floor_ms: dict[str, list[float]] = {name: [] for name in floors}
    grade = Grader(str(time.time_ns()))  # names no earlier run used, should the memo outlive it
    grade(0)
    for case in range(patches):  # both ways on the same task, after the same other task
        for name, on in modes.items():
            with spare_sandbox(on):
                grade(case - 1)  # starts the spare
                time.sleep(0.05)  # a grading that comes after a pause finds it ready
                miss_ms[name].append(grade(case))
        for name, call in floors.items():
            start = time.perf_counter()
            call()
            floor_ms[name].append(1000 * (time.perf_counter() - start))
    burst_ms: dict[str, list[float]] = {name: [] for name in modes}
    burst_cpu: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(2):  # alternating blocks
        for name, on in modes.items():
            times, cpu = burst(grade, bursts, on)
            burst_ms[name] += times
            burst_cpu[name].append(cpu)

    task, repo, fix = grade.cases[0]
    warm = unique_patch(fix, f"{grade.prefix}_hit")
    _graded(grade_patch(repo, task, warm), "the memo-hit patch")
    hit_ms = []
    for _ in range(hits):
        start = time.perf_counter()
        grade_patch(repo, task, warm)
        hit_ms.append(1000 * (time.perf_counter() - start))
    miss, hit = median(miss_ms["with a spare sandbox"]), median(hit_ms)
    cold = median(miss_ms["without (each starts its own)"])
    deciles = statistics.quantiles(miss_ms["with a spare sandbox"], n=10) if patches > 1 else [miss]
    where = f"{patches} patches over {len(grade.cases)} tasks, sandbox {isolation_level()}"
    return [
        Row("grading", "unique patch (miss) median, with a spare sandbox", miss, "ms",
            f"<= {MISS_TARGET_MS:g} ms", miss <= MISS_TARGET_MS, where),
        Row("grading", "unique patch (miss) p90, with a spare sandbox", deciles[-1], "ms"),
        Row("grading", "unique patch (miss) median, each starting its own sandbox", cold, "ms",
            note=f"{cold / miss:.2f}x the spare's; same run, alternating"),
        *(Row("grading", f"floor: {name} median", median(times), "ms",
              note=f"a grading without a spare is {cold / median(times):.2f}x this; same run, alternating")
          for name, times in floor_ms.items()),
        *(Row("grading", f"back to back: median, {name}", median(burst_ms[name]), "ms",
              note=f"{2 * bursts} gradings in 2 bursts, no pause; CPU {median(burst_cpu[name]):.1f} ms "
                   "per grading, grader and sandboxes")
          for name in modes),
        Row("grading", "memoised hit median", hit, "ms", f"<= {HIT_TARGET_MS:g} ms",
            hit <= HIT_TARGET_MS, f"{hits} calls"),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--patches", type=int, default=30, help="unique patches to grade")
    parser.add_argument("--hits", type=int, default=2000, help="memoised re-grades to time")
    parser.add_argument("--burst", type=int, default=20, help="back-to-back gradings per burst")
    parser.add_argument("--profile", type=int, metavar="TOP",
                        help="instead, cProfile the misses and print the TOP functions")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile_text(lambda: run(args.patches, 1, args.burst), args.profile))
        return []
    rows = run(args.patches, args.hits, args.burst)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
