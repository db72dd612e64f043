"""The ``srelib`` command line: list tasks, evaluate scripted policies, report a run, run the demo.

    srelib tasks [--suite generated]
    srelib tasks check srelib/env/scenario_data/memory_leak
    srelib tasks audit --suite generated
    srelib eval --policy heuristic --policy heuristic-revert --pools B,C --seeds 50 --out runs/h
    srelib report runs/h
    srelib demo --out results
    srelib serve --port 8000 --max-sessions 16
    srelib swebench export swe && srelib swebench grade predictions.jsonl --out swe/reports
    srelib agent train --out models/agent && srelib agent measure models/agent

The demo's CSVs name a policy and a handoff "null": read them with
``pandas.read_csv(path, keep_default_na=False, na_values=[""])`` so it stays a name.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path
from typing import Sequence

from srelib.policies.registry import POLICY_CLASSES, build_policy, scripted_policy

#: Columns that change from run to run; the demo's CSVs leave them out so a rerun reproduces them.
TIMING_COLUMNS = ("wall_s", "latency_s")
#: What ``srelib demo`` runs: the baselines, the ceiling of the no-answer partial revert, and
#: the repair ladder next to real phase-2 policies (after the oracle handoff) and joint ones.
DEMO_POLICIES = ("null", "random", "oracle-random", "heuristic", "heuristic-revert",
                 "heuristic-partial-revert", "reference")
DEMO_PHASE1 = {"heuristic": "HeuristicPhase1Policy"}
DEMO_PHASE2 = "PartialRevertPhase2Policy"
DEMO_LADDER_REAL = {"random": "RandomPhase2Policy", "revert": "RevertPhase2Policy"}
DEMO_LADDER_JOINT = ("heuristic-revert", "heuristic-partial-revert")
#: The demo's paired comparison: what reverting the suspect's deploy adds to the heuristic SRE.
DEMO_COMPARE = ("heuristic-revert", "heuristic")
#: Bounds on numeric options: past them a value is a typo, not a plan.
MAX_SEED_COUNT = 1_000_000
MAX_SEED = 2**63 - 1
MAX_EPOCHS = 1000.0
MAX_WORKERS = 256
MAX_STEPS = 100_000
MAX_SESSIONS = 10_000
MAX_IDLE_S = 7 * 24 * 3600


def main(argv: Sequence[str] | None = None) -> int:
    from srelib.env.sandbox import SANDBOX_ENV, SandboxRefused
    from srelib.extras import MissingExtra

    args = _parser().parse_args(argv)
    if getattr(args, "sandbox", None):  # the environment carries it to worker processes
        os.environ[SANDBOX_ENV] = args.sandbox
    try:
        return args.run(args)
    except (MissingExtra, SandboxRefused) as exc:  # one line: what to install
        print(f"srelib {args.command}: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        args.parser.error(str(exc))  # the usage of the subcommand that failed
    except BrokenPipeError:  # the reader went away (``srelib tasks | head``): nothing to say
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - so the exit flush is quiet too
        return 0
    except OSError as exc:  # the file system refused: name the path and the reason
        args.parser.error(f"{exc.filename or 'a file'}: {(exc.strerror or str(exc)).lower()}")
    return 2


def _parser() -> argparse.ArgumentParser:
    from srelib.env.sandbox import SANDBOX_ENV, SANDBOX_MODES

    parser = argparse.ArgumentParser(prog="srelib", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    grading = argparse.ArgumentParser(add_help=False)  # the option of every command that grades
    grading.add_argument("--sandbox", choices=SANDBOX_MODES, default=None, help=(
        "strict (default): grade patches only in a sandbox that holds (bubblewrap or unshare); "
        f"unsafe: also in a weaker one, verdicts marked unverified (env {SANDBOX_ENV})"))

    tasks = sub.add_parser("tasks", help="list the tasks and the pools; "
                           "'tasks check PATH' validates a scenario folder; "
                           "'tasks audit' looks for single-field tells")
    tasks.add_argument("--suite", choices=("classic", "generated"), default="classic",
                       help="classic: every task and pool; generated: counts and rejections")
    tasks.set_defaults(run=_cmd_tasks, parser=tasks)
    tasks_sub = tasks.add_subparsers(dest="tasks_command")
    check = tasks_sub.add_parser(
        "check", parents=[grading], help="validate a scenario folder and name each problem")
    check.add_argument("path", help="a folder like srelib/env/scenario_data/<task>")
    check.set_defaults(run=_cmd_tasks_check, parser=check)
    audit = tasks_sub.add_parser(
        "audit", help="the tell audit: how well one surface field, read alone, predicts the "
                      "culprit, the fault class, no-fault or the bad commit on held-out tasks")
    audit.add_argument("--suite", choices=("classic", "generated"), default="generated",
                       help="generated: fitted on train, scored on held-out; classic: "
                            "leave-one-task-out")
    audit.add_argument("--failures", action="store_true", help="print only the rows over the bar")
    audit.set_defaults(run=_cmd_tasks_audit, parser=audit)

    ev = sub.add_parser("eval", parents=[grading], help="evaluate scripted policies on a grid of episodes")
    ev.add_argument("--policy", action="append", required=True, metavar="NAME",
                    help=f"repeatable; one of: {', '.join(POLICY_CLASSES)}")
    ev.add_argument("--tasks", default="all", help="'all' (the classic tasks) or comma-separated "
                    "task ids and suites (classic, generated, generated:heldout, ...)")
    ev.add_argument("--pools", type=_pools, default="C", help="comma-separated pools (A, B, C, D)")
    ev.add_argument("--seeds", type=_seeds, default=10, help="a count N (seeds 0..N-1) or a,b,c")
    ev.add_argument("--workers", type=_whole(1, MAX_WORKERS), default=1,
                    help="processes to spread episodes over")
    ev.add_argument("--max-steps", type=_whole(1, MAX_STEPS), default=None,
                    help="cap on policy calls per episode")
    ev.add_argument("--out", required=True, help="run directory (resumed if it exists)")
    ev.add_argument("--no-resume", action="store_true", help="discard episodes already in --out")
    ev.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    ev.set_defaults(run=_cmd_eval, parser=ev)

    report = sub.add_parser("report", help="print a run's summary and write its plots")
    report.add_argument("run_dir", help="a run directory written by 'srelib eval' "
                        "(or its episodes.jsonl)")
    report.add_argument("--plots", default=None, help="where to write PNGs (default RUN/plots)")
    report.add_argument("--compare", default=None, metavar="A,B",
                        help="also print A - B per task, paired on seeds, with a bootstrap CI")
    report.set_defaults(run=_cmd_report, parser=report)

    demo = sub.add_parser("demo", parents=[grading], help="baselines and the oracle-P1 ceiling, written to --out")
    demo.add_argument("--out", default="results", help="output directory (CSV, Markdown, PNGs)")
    demo.add_argument("--seeds", type=_seeds, default=50, help="a count N or a,b,c")
    demo.add_argument("--workers", type=_whole(1, MAX_WORKERS), default=2,
                      help="processes to spread episodes over")
    demo.add_argument("--generated-tasks", type=_whole(1, MAX_SEED_COUNT), default=None,
                      help="how many tasks of each generated split the repair ladder runs, "
                      "evenly spaced (default: all, one seed each)")
    demo.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    demo.set_defaults(run=_cmd_demo, parser=demo)

    agent = sub.add_parser("agent", help="train, or measure, the small agent SFT makes "
                           "from the scripted policies (needs pip install 'srelib[train]')")
    agent_sub = agent.add_subparsers(dest="agent_command", required=True)
    train = agent_sub.add_parser("train", help="train the agent and save it to --out")
    train.add_argument("--out", default=None, help="folder to save to (default: the folder "
                       "of this checkout and machine class under $SRELIB_AGENT_HOME, else "
                       "~/.cache/srelib/agents, where the notebooks look)")
    train.add_argument("--if-missing", action="store_true",
                       help="do nothing when that folder already holds the agent")
    train.add_argument("--seeds", type=_seeds, default=None,
                       help="demonstration seeds: N or a,b,c (default: train_agent's)")
    train.add_argument("--epochs", type=_epochs, default=None, help="passes over the demonstrations")
    train.add_argument("--text", action="store_true",
                       help="answer with JSON text instead of tool calls")
    train.set_defaults(run=_cmd_agent_train, parser=train)
    path = agent_sub.add_parser("path", help="print the folder where 'srelib agent train' saves "
                                "the agent of this checkout and machine class")
    path.set_defaults(run=_cmd_agent_path, parser=path)
    measure = agent_sub.add_parser("measure", parents=[grading], help="parse-failure rate and score against the "
                                   "null policy on held-out seeds of the train tasks")
    measure.add_argument("folder", nargs="?", default=None, help="a saved agent (default: "
                         "the one 'srelib agent train' saves)")
    measure.add_argument("--seeds", type=_seeds, default=4,
                         help="N held-out seeds (1000..1000+N-1, never trained on) or a,b,c")
    measure.add_argument("--pools", type=_pools, default="A,C", help="comma-separated pools")
    measure.set_defaults(run=_cmd_agent_measure, parser=measure)

    serve = sub.add_parser("serve", parents=[grading], help="serve the environment over OpenEnv's protocol "
                           "(needs pip install 'srelib[serve]')")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default: this machine only)")
    serve.add_argument("--port", type=_whole(1, 65535), default=8000)
    serve.add_argument("--max-sessions", type=_whole(1, MAX_SESSIONS), default=16,
                       help="cap on concurrent sessions")
    serve.add_argument("--idle-timeout", type=_whole(1, MAX_IDLE_S), default=300,
                       help="seconds after which an idle session is closed")
    serve.add_argument("--max-per-client", type=_whole(1, MAX_SESSIONS), default=None,
                       help="cap on the sessions of one client host (default: a quarter of "
                            "--max-sessions, at least 1)")
    serve.add_argument("--read-timeout", type=_whole(1, MAX_IDLE_S), default=10,
                       help="seconds a connection has to send a whole request")
    serve.set_defaults(run=_cmd_serve, parser=serve)

    swe = sub.add_parser("swebench", help="the train tasks as a SWE-bench dataset; "
                         "grade SWE-bench predictions in srelib's sandbox")
    swe_sub = swe.add_subparsers(dest="swebench_command", required=True)
    export = swe_sub.add_parser("export", help="write OUT/train.jsonl and OUT/repos/")
    export.add_argument("out", help="output directory")
    export.add_argument("--suite", choices=("classic", "generated"), default="classic")
    export.add_argument("--seed", type=_whole(0, MAX_SEED), default=0,
                        help="the episode seed of the problem statements")
    export.set_defaults(run=_cmd_swebench_export, parser=export)
    grade = swe_sub.add_parser("grade", parents=[grading], help="grade SWE-bench predictions "
                               "(instance_id, model_name_or_path, model_patch)")
    grade.add_argument("predictions", help="SWE-bench predictions: .jsonl (one a line) or .json "
                                           "(a list, or an {instance_id: prediction} object)")
    grade.add_argument("--out", required=True, help="where the reports and summaries go")
    grade.set_defaults(run=_cmd_swebench_grade, parser=grade)
    return parser


def _cmd_swebench_export(args) -> int:
    from srelib.integrations.swebench import DATASET_FILE, export_dataset

    out = output_dir(args.out, "OUT")
    instances = export_dataset(out, suite=args.suite, seed=args.seed)
    print(f"{len(instances)} instances in {out / DATASET_FILE}; repositories in {out / 'repos'}")
    return 0


def _cmd_swebench_grade(args) -> int:
    from srelib.integrations.swebench import PROBLEMS_FILE, grade_predictions

    if not Path(args.predictions).is_file():
        raise ValueError(f"{_short(args.predictions)} is not a file")
    result = grade_predictions(args.predictions, output_dir(args.out, "--out"))
    for problem in result["problems"]:
        print(f"line {problem['line']}: {problem['error']}", file=sys.stderr)
    for model, s in result["summaries"].items():
        print(f"{model}: {s['resolved_instances']} of {s['submitted_instances']} resolved, "
              f"{s['empty_patch_instances']} empty, {s['error_instances']} errors")
    print(f"reports in {args.out} ({len(result['problems'])} problem(s) in {PROBLEMS_FILE})")
    return 1 if result["problems"] else 0


def _cmd_agent_train(args) -> int:
    from srelib.training.agent import train_agent

    options = {"tools": not args.text}
    if args.epochs is not None:
        options["epochs"] = args.epochs
    if args.seeds is not None:
        options["seeds"] = range(args.seeds) if isinstance(args.seeds, int) else args.seeds
    if args.if_missing:
        from srelib.training.agent import default_agent_dir, find_agent

        saved = find_agent(args.out or default_agent_dir(**options))
        if saved:
            print(f"The agent is already saved in {saved}.")
            return 0
    train_agent(args.out, **options)
    return 0


def _cmd_agent_path(args) -> int:
    from srelib.training.agent import default_agent_dir

    print(default_agent_dir())
    return 0


def _cmd_agent_measure(args) -> int:
    from srelib.analysis.stats import to_markdown
    from srelib.training.agent import (HELD_OUT_SEEDS, agent_policy, default_agent_dir,
                                       find_agent, measure_agent)

    folder = find_agent(args.folder)
    if folder is None:
        raise ValueError(f"no saved agent in {args.folder or default_agent_dir()}; "
                         "run 'srelib agent train' first")
    seeds = (range(HELD_OUT_SEEDS[0], HELD_OUT_SEEDS[0] + args.seeds)
             if isinstance(args.seeds, int) else args.seeds)
    result = measure_agent(agent_policy(folder), seeds=seeds, pools=args.pools)
    print(f"parse-failure rate: {result['parse_failure_rate']:.3f} of the agent's steps; "
          f"invalid actions: {result['invalid_action_rate']:.3f}")
    print(to_markdown(result["scores"], index=False))
    return 0


def _cmd_serve(args) -> int:
    from srelib.serve.server import serve

    _check_listen(args.host, args.port)
    serve(args.host, args.port, max_sessions=args.max_sessions, idle_timeout=args.idle_timeout,
          max_per_client=args.max_per_client, read_timeout=args.read_timeout)
    return 0


def _check_listen(host: str, port: int) -> None:
    """A ValueError naming the problem if ``host``:``port`` cannot be listened on (an unknown
    host, an address of another machine, a port taken or reserved)."""
    import socket

    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except (OSError, UnicodeError) as exc:  # UnicodeError: a host name no resolver takes
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"cannot listen on {_short(host)} port {port}: {reason.lower()}") from None


def _cmd_tasks(args) -> int:
    if args.suite == "generated":
        from srelib.analysis.suite_tables import print_generated

        print_generated()
        return 0

    from srelib.env.pools import POOLS
    from srelib.env.lookup import get_scenario
    from srelib.env.scenarios import TASKS
    from srelib.analysis.stats import markdown_table

    tasks = [[t, s.severity, s.heldout, s.repo, ",".join(p for p in POOLS if t in POOLS[p].tasks),
              s.title] for t, s in ((t, get_scenario(t)) for t in TASKS)]
    pools = [[p, pool.split, pool.mode, len(pool.tasks), pool.description]
             for p, pool in POOLS.items()]
    print(markdown_table(["task", "severity", "held out", "repo", "pools", "title"], tasks))
    print()
    print(markdown_table(["pool", "split", "mode", "classic tasks", "description"], pools))
    return 0


def _cmd_tasks_check(args) -> int:
    from srelib.env.scenario_check import check_folder

    if not Path(args.path).is_dir():
        raise ValueError(f"{_short(args.path)} is not a folder")
    problems = check_folder(args.path)
    for problem in problems:
        print(f"problem: {problem}")
    print(f"{args.path}: {len(problems)} problem(s)" if problems else f"{args.path}: ok")
    return 1 if problems else 0


def _cmd_tasks_audit(args) -> int:
    from srelib.analysis.tell_audit import audit, failures, format_audit

    rows = audit(args.suite)
    print(format_audit(rows, only_failures=args.failures))
    found = failures(rows)
    print(f"\n{args.suite} suite: {len(rows)} predictors, {len(found)} over the bar "
          f"(held-out rate <= {min(r['bar'] for r in rows):.2f}..{max(r['bar'] for r in rows):.2f})")
    return 1 if found else 0


def _cmd_eval(args) -> int:
    from srelib.runners.rollout import evaluate

    policies = {name: scripted_policy(name) for name in dict.fromkeys(args.policy)}
    output_dir(args.out, "--out", create=False)  # evaluate creates it once the grid is valid
    frame = evaluate(policies, tasks=args.tasks, pools=args.pools, seeds=args.seeds,
                     workers=args.workers, out=args.out, resume=not args.no_resume,
                     progress=not args.no_progress, max_steps=args.max_steps)
    _print_summary(frame)
    print(f"\n{len(frame)} episodes in {args.out}")
    return 0


def _cmd_report(args) -> int:
    from srelib.results.runs import load_run
    from srelib.results.store import run_directory

    frame = load_run(args.run_dir)
    if frame.empty:
        raise ValueError(f"{args.run_dir} holds no episodes yet")
    _print_summary(frame)
    if args.compare:
        from srelib.analysis.stats import paired_difference, to_markdown

        names = args.compare.split(",")
        if len(names) != 2:
            raise ValueError(f"--compare takes two policy names A,B; got {args.compare!r}")
        print(f"\nPaired difference {names[0]} - {names[1]} (final score):\n")
        print(to_markdown(paired_difference(frame, *names), index=False))
    plots = output_dir(args.plots, "--plots") if args.plots else \
        output_dir(run_directory(args.run_dir) / "plots", "the run's plots folder")
    written = _write_plots(frame, plots, compare=names if args.compare else None)
    print("\nplots: " + ", ".join(str(p) for p in written))
    return 0


def _cmd_demo(args) -> int:
    from srelib.analysis.ceiling import ceiling_episodes, suite_ladder, summarize_ceiling, summarize_ladder
    from srelib.plots.frames import ceiling_gap, localisation_vs_score, repair_ladder
    from srelib.runners.rollout import evaluate
    from srelib.analysis.stats import to_markdown

    out = output_dir(args.out, "--out")
    start = time.perf_counter()
    common = {"seeds": args.seeds, "workers": args.workers, "progress": not args.no_progress}
    frame = evaluate({n: scripted_policy(n) for n in DEMO_POLICIES}, tasks="all",
                     pools=["C", "D"], **common)
    frame.drop(columns=list(TIMING_COLUMNS)).to_csv(out / "episodes.csv", index=False)
    summary = _print_summary(frame, DEMO_POLICIES)
    (out / "summary.md").write_text(summary + "\n")
    written = _write_plots(frame, out, DEMO_POLICIES, compare=DEMO_COMPARE)

    phase2 = functools.partial(build_policy, DEMO_PHASE2)
    phase1 = {n: functools.partial(build_policy, c) for n, c in DEMO_PHASE1.items()}
    episodes = ceiling_episodes(phase2, phase1, tasks="all", **common)
    episodes.drop(columns=list(TIMING_COLUMNS)).to_csv(out / "ceiling_episodes.csv", index=False)
    table = summarize_ceiling(episodes)
    table.to_csv(out / "ceiling.csv", index=False)
    ceiling_md = to_markdown(_ceiling_cells(table))
    print(f"\nOracle-P1 ceiling of {DEMO_PHASE2}: repair [95% CI] per handoff, and the gaps:\n")
    print(ceiling_md)
    _save(ceiling_gap(table, phase2=DEMO_PHASE2), out / "ceiling_gap.png")
    _save(localisation_vs_score(frame, policies=DEMO_POLICIES), out / "localisation.png")
    written += [out / "ceiling_gap.png", out / "localisation.png"]

    ladder = suite_ladder(generated_tasks=args.generated_tasks,
                          real={n: functools.partial(build_policy, c)
                                for n, c in DEMO_LADDER_REAL.items()},
                          joint={n: scripted_policy(n) for n in DEMO_LADDER_JOINT}, **common)
    ladder.drop(columns=list(TIMING_COLUMNS)).to_csv(out / "ladder_episodes.csv", index=False)
    steps = summarize_ladder(ladder)
    steps.to_csv(out / "ladder.csv", index=False)
    ladder_md = to_markdown(_ladder_cells(steps), index=False)
    print("\nRepair ladder: repaired in full [95% CI] per rung and policy, per suite:\n")
    print(ladder_md)
    _save(repair_ladder(steps), out / "repair_ladder.png")
    written.append(out / "repair_ladder.png")
    (out / "ceiling.md").write_text(_ceiling_markdown(ceiling_md, ladder_md, steps))
    print(f"\nwrote {out}/episodes.csv, summary.md, ceiling.csv, ladder.csv, ceiling.md and "
          f"{len(written)} plots in {time.perf_counter() - start:.0f}s")
    return 0


def _ladder_cells(steps):
    """One row per suite and policy: episodes, repaired in full and repair as "mean [CI]"."""
    from srelib.analysis.stats import format_ci

    return steps.assign(
        policy=[p.replace("rung:", "rung ") for p in steps.policy],
        full=[format_ci(*v) for v in zip(steps.full, steps.full_low, steps.full_high)],
        repair=[format_ci(*v) for v in zip(steps.repair, steps.repair_low, steps.repair_high)],
        commit_diffed=steps.commit_diffed.round(2), bad_file_edited=steps.bad_file_edited.round(2),
    )[["suite", "policy", "kind", "n", "full", "repair", "commit_diffed", "bad_file_edited"]]


def _ceiling_markdown(ceiling_md: str, ladder_md: str, steps) -> str:
    """results/ceiling.md: the per-task ceiling, the ladder, the no-answer baseline's rate."""
    from srelib.analysis.stats import format_ci

    baseline = steps[steps.policy == "rung:belief"]
    rates = "; ".join(f"{row.suite} {format_ci(row.full, row.full_low, row.full_high)} "
                      f"(n = {row.n})" for row in baseline.itertuples())
    return (f"# Oracle-P1 ceiling and repair ladder\n\n"
            f"## Oracle-P1 ceiling of {DEMO_PHASE2} per classic task\n\n"
            "Repair [95% bootstrap CI] after each handoff (oracle: pool B; null and heuristic: "
            "their own handoff, pools C/D), and the paired gaps to the oracle handoff.\n\n"
            f"{ceiling_md}\n\n## Repair ladder\n\n"
            "Each rung is the partial revert given one more piece of the answer after the oracle "
            "handoff: the oracle belief (`rung belief`, the no-answer baseline itself), + the bad "
            "commit, + the bad file, + the bad function, + the reference patch. `oracle handoff` "
            "rows are real phase-2 policies after the same handoff; `joint` rows play both "
            "phases (pool C for train tasks, D for held-out ones). `full`: share of episodes "
            "repaired in full; `repair`: the score's repair component; `commit_diffed`, "
            "`bad_file_edited`: localisation columns (means). Generated suites: one seed per "
            "task.\n\n"
            f"{ladder_md}\n\n"
            f"No-answer baseline ({DEMO_PHASE2} after the oracle handoff), share repaired in "
            f"full [95% CI]: {rates}.\n")


def _ceiling_cells(table):
    """One row per task: repair under each handoff and each gap to oracle, as "mean [CI]"."""
    from srelib.analysis.stats import format_ci

    cells = table.assign(repair_cell=[format_ci(*v) for v in
                                      zip(table.repair, table.ci_low, table.ci_high)],
                         gap_cell=[format_ci(*v) for v in
                                   zip(table.gap, table.gap_low, table.gap_high)])
    wide = cells.pivot(index="task", columns="handoff", values="repair_cell")
    gaps = cells[cells.handoff != "oracle"].pivot(index="task", columns="handoff",
                                                  values="gap_cell")
    handoffs = list(dict.fromkeys(table["handoff"]))
    wide = wide[handoffs].join(gaps[handoffs[1:]].add_prefix("gap oracle-"))
    wide = wide.reindex(list(dict.fromkeys(table["task"])))
    wide.columns.name = None
    return wide


def _print_summary(frame, policies: Sequence[str] | None = None) -> str:
    from srelib.analysis.stats import summary_table, to_markdown

    table = summary_table(frame)
    text = to_markdown(table if policies is None else table[list(policies)])
    print("Mean final score per task [95% bootstrap CI]:\n")
    print(text)
    return text


def _write_plots(frame, folder: Path, policies: Sequence[str] | None = None,
                 compare: Sequence[str] | None = None) -> list[Path]:
    """The run's plots as PNGs in ``folder``; the parse-failure plot only when a reply failed
    to parse, the paired difference only for a ``compare`` pair."""
    from srelib import plots

    figures = {"score_distributions.png": plots.score_distributions(frame, policies=policies),
               "score_ecdf.png": plots.score_distributions(frame, kind="ecdf", policies=policies),
               "components.png": plots.component_breakdown(frame, policies=policies),
               "resolved.png": plots.resolved_rates(frame, policies=policies),
               "steps_per_phase.png": plots.steps_per_phase(frame, policies=policies)}
    if compare:
        figures["paired_difference.png"] = plots.paired_difference(frame, *compare)
    if plots.has_parse_failures(frame):
        figures["parse_failures.png"] = plots.parse_failure_rate(frame, policies=policies)
    for name, fig in figures.items():
        _save(fig, folder / name)
    return [folder / name for name in figures]


def _save(fig, path: Path) -> None:
    fig.savefig(path, dpi=120)


def output_dir(path: str | os.PathLike, what: str, create: bool = True) -> Path:
    """Check that the directory ``path`` can be written (and create it unless ``create`` is
    False); otherwise a ValueError names the path and the problem (``what`` names the option)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what} {path} is a file, not a directory")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise ValueError(f"{what} {path} cannot be created: {existing} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        problem = "is not writable" if existing == path else \
            f"cannot be created: {existing} is not writable"
        raise ValueError(f"{what} {path} {problem}")
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"{what} {path} cannot be created: {exc.strerror.lower()}") from None
    return path


def _seeds(text: str):
    """``N`` (seeds 0..N-1, 1 <= N <= MAX_SEED_COUNT) or a comma list of seeds in [0, MAX_SEED]."""
    try:
        seeds = int(text) if "," not in text else [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must be a count or a comma list, got {text!r}")
    if isinstance(seeds, int) and not 1 <= seeds <= MAX_SEED_COUNT:
        raise argparse.ArgumentTypeError(
            f"a seed count must be between 1 and {MAX_SEED_COUNT}, got {_short(text)}")
    if isinstance(seeds, list) and (not seeds or min(seeds) < 0 or max(seeds) > MAX_SEED
                                    or len(seeds) > MAX_SEED_COUNT):
        raise argparse.ArgumentTypeError(
            f"a seed list holds 1 to {MAX_SEED_COUNT} seeds in [0, {MAX_SEED}], got {_short(text)}")
    return seeds


def _short(text: str) -> str:
    """``text`` quoted, cut to 40 characters for an error line."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _epochs(text: str) -> float:
    """A number of passes over the data, more than 0 and at most ``MAX_EPOCHS``."""
    try:
        epochs = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"epochs must be a number, got {_short(text)}") from None
    if not 0 < epochs <= MAX_EPOCHS:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"epochs must be more than 0 and at most {MAX_EPOCHS:g}, "
                                         f"got {_short(text)}")
    return epochs


def _pools(text: str) -> list[str]:
    from srelib.env.pools import POOLS

    pools = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in pools if p not in POOLS]
    if unknown or not pools:
        raise argparse.ArgumentTypeError(f"unknown pools {unknown or [text]}; "
                                         f"valid pools: {', '.join(POOLS)}")
    return pools


def _whole(low: int, high: int):
    """An argparse type: a whole number in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low} to {high}, got {_short(text)}")
        return value
    return parse
