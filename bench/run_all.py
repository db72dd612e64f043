"""Run every CPU benchmark, each in its own process, and print one markdown table.

For a missed target on grading latency, environment throughput or batched generation, the
cProfile top of that benchmark follows the table. The GPU benchmark (``gpu_gemma.py``) is
not part of this run.

    python bench/run_all.py --reference /tmp/reference          # the published numbers
    python bench/run_all.py --quick                             # small sizes, a smoke run
    python bench/run_all.py --results bench/results.md --table docs/benchmarks.md   # make bench
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO_ROOT, Row, base_parser, format_table  # noqa: E402
from results_doc import ScriptRun, machine, results_markdown, write_targets  # noqa: E402

BENCH = Path(__file__).resolve().parent
#: script -> (full-size arguments, quick arguments)
SCRIPTS = {
    "bench_import.py": (["--repeats", "15"], ["--repeats", "3"]),
    "bench_grading.py": (["--patches", "30", "--hits", "2000"], ["--patches", "3", "--hits", "50"]),
    "bench_env.py": (["--seeds", "5", "--repeats", "5"], ["--seeds", "1", "--repeats", "1"]),
    "bench_generation.py": (["--repeats", "3"],
                            ["--episodes", "2", "--max-steps", "2", "--max-new-tokens", "8",
                             "--repeats", "1"]),
    "bench_memory.py": (["--episodes", "10000", "--warmup", "500"],
                        ["--episodes", "60", "--warmup", "20"]),
    "bench_notebooks.py": ([], []),
    "bench_taskgen.py": (["--patches", "20"], ["--patches", "3"]),
    "bench_serve.py": (["--seconds", "20", "--soak-seconds", "300"],
                       ["--seconds", "2", "--soak-seconds", "10", "--seeds", "1",
                        "--sweep-seeds", "1"]),
    "bench_scale.py": (["--seeds", "10"], ["--seeds", "1", "--engines", "dask"]),
}
#: script -> (arguments that print a profile, metric whose miss asks for it)
PROFILES = {
    "bench_grading.py": (["--profile", "20", "--patches", "10"],
                         "unique patch (miss) median, with a spare sandbox"),
    "bench_env.py": (["--profile", "25", "--seeds", "2"], "srelib / reference episodes/s"),
    "bench_generation.py": (["--profile", "20", "--max-steps", "4"],
                            "lockstep_cached / one-at-a-time episodes/s"),
}


def settle(max_s: float) -> None:
    """Wait, up to ``max_s`` seconds, until the 1-minute load average is no more than the cores:
    it lags, so the script before this one would otherwise mark this one "under load"."""
    deadline = time.monotonic() + max_s
    while os.getloadavg()[0] > (os.cpu_count() or 1) and time.monotonic() < deadline:
        time.sleep(2)


def run_script(script: str, args: list[str]) -> ScriptRun:
    """One benchmark in a fresh interpreter: its command, the load when it started and its
    rows (a failure becomes a failed row)."""
    run = ScriptRun(script, shlex.join(["python", f"bench/{script}", *args]), os.getloadavg()[0], 0.0)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        done = subprocess.run([sys.executable, str(BENCH / script), *args, "--json", str(out)],
                              cwd=REPO_ROOT, capture_output=True, text=True)
        run.seconds = time.perf_counter() - start
        if done.returncode != 0 or not out.exists():
            error = (done.stderr.strip().splitlines() or ["no output"])[-1]
            run.rows = [Row(script.removesuffix(".py"), "run", "failed", met=False, note=error)]
        else:
            run.rows = [Row(**row) for row in json.loads(out.read_text())]
    return run


def profile(script: str, args: list[str]) -> str:
    done = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=REPO_ROOT,
                          capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else done.stderr


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--reference", metavar="PATH",
                        help="reference checkout for the environment comparison")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--settle", type=float, default=0.0, metavar="S",
                        help="before each script, wait up to S seconds for the load to settle")
    parser.add_argument("--only", nargs="+", choices=sorted(SCRIPTS), help="run only these")
    parser.add_argument("--results", metavar="PATH",
                        help="write the machine, date, commands and rows as markdown to PATH")
    parser.add_argument("--table", metavar="PATH",
                        help="rewrite the benchmark table of PATH (docs/benchmarks.md) from this "
                             "run (a full run only)")
    args = parser.parse_args(argv)
    if args.table and (args.only or args.quick):
        parser.error("--table takes a full run: drop --only and --quick")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {machine()}, load average {load} (1/5/15 min)\n")
    rows, profiles, runs = [], [], []
    for script in args.only or SCRIPTS:
        full, quick = SCRIPTS[script]
        wants_reference = script == "bench_env.py" and args.reference
        extra = ["--reference", args.reference] if wants_reference else []
        settle(args.settle)
        run = run_script(script, (quick if args.quick else full) + extra)
        print(f"{script}: {run.seconds:.0f}s", file=sys.stderr)
        runs.append(run)
        found = run.rows
        rows += found
        if script in PROFILES and not args.quick:
            profile_args, metric = PROFILES[script]
            if any(r.metric == metric and r.met is False for r in found):
                profiles.append(f"### {script}: missed {metric!r}; cProfile top\n\n```\n"
                                f"{profile(script, profile_args).strip()}\n```")
    print(format_table(rows))
    for text in profiles:
        print(f"\n{text}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in rows], indent=2))
    if args.results:
        command = shlex.join(["python", "bench/run_all.py", *(argv if argv is not None else sys.argv[1:])])
        Path(args.results).write_text(results_markdown(runs, command, profiles))
    if args.table:
        write_targets(Path(args.table), runs)
    return rows


if __name__ == "__main__":
    main()
