"""The ``srelib`` command line: list tasks, evaluate scripted policies, report a run, run the demo.

    srelib tasks [--suite generated]
    srelib tasks check srelib/env/simulation/scenario_data/memory_leak
    srelib tasks audit --suite generated
    srelib tasks build --key FILE [--shapes DIR]
    srelib eval --policy heuristic --policy heuristic-revert --pools B,C --seeds 50 --out runs/h
    srelib verify runs/h --key run.key
    srelib report runs/h
    srelib demo --out results
    srelib serve --port 8000 --max-sessions 16
    srelib swebench export swe && srelib swebench grade predictions.jsonl --out swe/reports
    srelib agent train --out models/agent && srelib agent measure models/agent

Each subcommand's handler lives in :mod:`srelib.commands` (one module per group); this module
parses the command line and reports errors in one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from srelib.commands.agent import cmd_agent_measure, cmd_agent_path, cmd_agent_train
from srelib.commands.demo import cmd_demo
from srelib.commands.options import (MAX_IDLE_S, MAX_SEED, MAX_SEED_COUNT, MAX_SESSIONS, MAX_STEPS,
                                     MAX_WORKERS, epochs_option, pools_option, proxies_option,
                                     seeds_option, whole_number)
from srelib.commands.runs import cmd_eval, cmd_report, cmd_verify
from srelib.commands.serve import cmd_serve
from srelib.commands.swebench import cmd_swebench_export, cmd_swebench_grade
from srelib.commands.tasks import cmd_tasks, cmd_tasks_audit, cmd_tasks_build, cmd_tasks_check
from srelib.policies.registry import POLICY_CLASSES


def main(argv: Sequence[str] | None = None) -> int:
    from srelib.env.grading.sandbox.isolate import SANDBOX_ENV, SandboxRefused
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
    from srelib.env.grading.sandbox.isolate import SANDBOX_ENV, SANDBOX_MODES

    from srelib._version import __version__

    parser = argparse.ArgumentParser(prog="srelib", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"srelib {__version__}")
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
    tasks.set_defaults(run=cmd_tasks, parser=tasks)
    tasks_sub = tasks.add_subparsers(dest="tasks_command")
    check = tasks_sub.add_parser(
        "check", parents=[grading], help="validate a scenario folder and name each problem")
    check.add_argument("path", help="a folder like srelib/env/simulation/scenario_data/<task>")
    check.set_defaults(run=cmd_tasks_check, parser=check)
    audit = tasks_sub.add_parser(
        "audit", help="the tell audit: how well one surface field, read alone, predicts the "
                      "culprit, the fault class, no-fault or the bad commit on held-out tasks; "
                      "then the shallow-agent battery and the investigation gap")
    audit.add_argument("--suite", choices=("classic", "generated"), default="generated",
                       help="generated: fitted on train, scored on held-out; classic: "
                            "leave-one-task-out")
    audit.add_argument("--failures", action="store_true", help="print only the rows over the bar")
    audit.add_argument("--stride", type=whole_number(1, 1000), default=2,
                       help="the shallow-agent battery reads every STRIDE-th generated task of "
                            "each split (default 2; 1 for all)")
    audit.add_argument("--no-battery", action="store_true",
                       help="skip the shallow-agent battery (the tell audit only)")
    audit.set_defaults(run=cmd_tasks_audit, parser=audit)
    build = tasks_sub.add_parser(
        "build", help="build the generated suite: the public one, or with --key a private suite "
                      "whose every drawn value depends on a secret key (docs/private-suites.md)")
    build.add_argument("--key", default=None, help="a private suite's key file (16 bytes or "
                       "more; default: $SRELIB_SUITE_KEY, else the public suite)")
    build.add_argument("--shapes", default=None, help="a folder of extra shape and family "
                       "modules the private suite adds (kept by the evaluator)")
    build.add_argument("--out", default=None, help="the private suite's folder (default: "
                       "$SRELIB_SUITE_DIR, else the key file's name + '.suite')")
    build.set_defaults(run=cmd_tasks_build, parser=build)

    ev = sub.add_parser("eval", parents=[grading], help="evaluate scripted policies on a grid of episodes")
    ev.add_argument("--policy", action="append", required=True, metavar="NAME",
                    help=f"repeatable; one of: {', '.join(POLICY_CLASSES)}")
    ev.add_argument("--tasks", default="all", help="'all' (the classic tasks) or comma-separated "
                    "task ids and suites (classic, generated, generated:heldout, ...)")
    ev.add_argument("--pools", type=pools_option, default="C", help="comma-separated pools (A, B, C, D)")
    ev.add_argument("--seeds", type=seeds_option, default=10, help="a count N (seeds 0..N-1) or a,b,c")
    ev.add_argument("--workers", type=whole_number(1, MAX_WORKERS), default=1,
                    help="processes to spread episodes over")
    ev.add_argument("--max-steps", type=whole_number(1, MAX_STEPS), default=None,
                    help="cap on policy calls per episode")
    ev.add_argument("--out", required=True, help="run directory (resumed if it exists)")
    ev.add_argument("--no-resume", action="store_true", help="discard episodes already in --out")
    ev.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    ev.add_argument("--sign", default=None, metavar="KEYFILE", help="sign the finished run "
                    "(run.sig): an HMAC secret file, or an Ed25519 PEM private key")
    ev.set_defaults(run=cmd_eval, parser=ev)

    verify = sub.add_parser("verify", help="replay a run, re-run its scripted policies, check "
                            "its grid and signature; exit 1 when it does not verify")
    verify.add_argument("run_dir", help="a run directory written by 'srelib eval' or evaluate")
    verify.add_argument("--key", default=None, metavar="KEYFILE",
                        help="check run.sig with this HMAC secret or Ed25519 (public) key")
    verify.add_argument("--limit", type=whole_number(1, 10_000), default=20,
                        help="problems and claims shown of each (default 20)")
    verify.add_argument("--all", action="store_true", help="show every problem and claim")
    verify.set_defaults(run=cmd_verify, parser=verify)

    report = sub.add_parser("report", parents=[grading],
                            help="print a run's summary, write its plots and, with --html, "
                                 "one self-contained HTML report")
    report.add_argument("run_dir", help="a run directory written by 'srelib eval' "
                        "(or its episodes.jsonl)")
    report.add_argument("--plots", default=None, help="where to write PNGs (default RUN/plots)")
    report.add_argument("--compare", default=None, metavar="A,B",
                        help="also print A - B per task, paired on seeds, with a bootstrap CI")
    report.add_argument("--html", default=None, metavar="FILE",
                        help="also write the run as one HTML file: provenance, verification, "
                             "plots, tables and every episode step by step (no server needed)")
    report.add_argument("--no-verify", action="store_true",
                        help="with --html: do not replay the episodes (faster; no verification "
                             "and no per-step results)")
    report.add_argument("--workers", type=whole_number(1, MAX_WORKERS), default=2,
                        help="with --html: processes that replay the episodes")
    report.set_defaults(run=cmd_report, parser=report)

    demo = sub.add_parser("demo", parents=[grading], help="baselines and the oracle-P1 ceiling, written to --out")
    demo.add_argument("--out", default="results", help="output directory (CSV, Markdown, PNGs)")
    demo.add_argument("--seeds", type=seeds_option, default=50, help="a count N or a,b,c")
    demo.add_argument("--workers", type=whole_number(1, MAX_WORKERS), default=2,
                      help="processes to spread episodes over")
    demo.add_argument("--generated-tasks", type=whole_number(1, MAX_SEED_COUNT), default=None,
                      help="how many tasks of each generated split the repair ladder runs, "
                      "evenly spaced (default: all, one seed each)")
    demo.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    demo.set_defaults(run=cmd_demo, parser=demo)

    agent = sub.add_parser("agent", help="train, or measure, the small agent SFT makes "
                           "from the scripted policies (needs pip install 'srelib[train]')")
    agent_sub = agent.add_subparsers(dest="agent_command", required=True)
    train = agent_sub.add_parser("train", help="train the agent and save it to --out")
    train.add_argument("--out", default=None, help="folder to save to (default: the folder "
                       "of this checkout and machine class under $SRELIB_AGENT_HOME, else "
                       "~/.cache/srelib/agents, where the notebooks look)")
    train.add_argument("--if-missing", action="store_true",
                       help="do nothing when that folder already holds the agent")
    train.add_argument("--seeds", type=seeds_option, default=None,
                       help="demonstration seeds: N or a,b,c (default: train_agent's)")
    train.add_argument("--epochs", type=epochs_option, default=None, help="passes over the demonstrations")
    train.add_argument("--text", action="store_true",
                       help="answer with JSON text instead of tool calls")
    train.set_defaults(run=cmd_agent_train, parser=train)
    path = agent_sub.add_parser("path", help="print the folder where 'srelib agent train' saves "
                                "the agent of this checkout and machine class")
    path.set_defaults(run=cmd_agent_path, parser=path)
    measure = agent_sub.add_parser("measure", parents=[grading], help="parse-failure rate and score against the "
                                   "null policy on held-out seeds of the train tasks")
    measure.add_argument("folder", nargs="?", default=None, help="a saved agent (default: "
                         "the one 'srelib agent train' saves)")
    measure.add_argument("--seeds", type=seeds_option, default=4,
                         help="N held-out seeds (1000..1000+N-1, never trained on) or a,b,c")
    measure.add_argument("--pools", type=pools_option, default="A,C", help="comma-separated pools")
    measure.set_defaults(run=cmd_agent_measure, parser=measure)

    serve = sub.add_parser("serve", parents=[grading], help="serve the environment over OpenEnv's protocol "
                           "(needs pip install 'srelib[serve]')")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default: this machine only)")
    serve.add_argument("--port", type=whole_number(1, 65535), default=8000)
    serve.add_argument("--max-sessions", type=whole_number(1, MAX_SESSIONS), default=16,
                       help="cap on concurrent sessions")
    serve.add_argument("--idle-timeout", type=whole_number(1, MAX_IDLE_S), default=300,
                       help="seconds after which an idle session is closed")
    serve.add_argument("--max-per-client", type=whole_number(1, MAX_SESSIONS), default=None,
                       help="cap on the sessions of one client host (default: a quarter of "
                            "--max-sessions, at least 1)")
    serve.add_argument("--read-timeout", type=whole_number(1, MAX_IDLE_S), default=10,
                       help="seconds a connection has to send a whole request")
    serve.add_argument("--forwarded-allow-ips", type=proxies_option, default=None,
                       metavar="ADDRESSES",
                       help="proxies (comma-separated addresses or networks) whose "
                            "X-Forwarded-For names the client (default: none, the peer is "
                            "the client)")
    serve.set_defaults(run=cmd_serve, parser=serve)

    swe = sub.add_parser("swebench", help="the train tasks as a SWE-bench dataset; "
                         "grade SWE-bench predictions in srelib's sandbox")
    swe_sub = swe.add_subparsers(dest="swebench_command", required=True)
    export = swe_sub.add_parser("export", help="write OUT/train.jsonl and OUT/repos/")
    export.add_argument("out", help="output directory")
    export.add_argument("--suite", choices=("classic", "generated"), default="classic")
    export.add_argument("--seed", type=whole_number(0, MAX_SEED), default=0,
                        help="the episode seed of the problem statements")
    export.set_defaults(run=cmd_swebench_export, parser=export)
    grade = swe_sub.add_parser("grade", parents=[grading], help="grade SWE-bench predictions "
                               "(instance_id, model_name_or_path, model_patch)")
    grade.add_argument("predictions", help="SWE-bench predictions: .jsonl (one a line) or .json "
                                           "(a list, or an {instance_id: prediction} object)")
    grade.add_argument("--out", required=True, help="where the reports and summaries go")
    grade.set_defaults(run=cmd_swebench_grade, parser=grade)
    return parser
