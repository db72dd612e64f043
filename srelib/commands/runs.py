"""``srelib eval``, ``srelib verify`` and ``srelib report``: evaluate scripted policies into a
run directory (signed with ``--sign``), verify a run, and print a run's summary and write its
plots and its HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from srelib.commands.options import output_dir
from srelib.policies.registry import scripted_policy


def cmd_eval(args) -> int:
    """``srelib eval``: evaluate the named scripted policies into ``--out``, print
    the summary, and sign the run with ``--sign KEYFILE``."""
    from srelib.results.signing import load_key, sign_run
    from srelib.runners.rollout import evaluate

    policies = {name: scripted_policy(name) for name in dict.fromkeys(args.policy)}
    if args.sign:
        load_key(args.sign)  # a bad key fails before any episode runs
    output_dir(args.out, "--out", create=False)  # evaluate creates it once the grid is valid
    frame = evaluate(policies, tasks=args.tasks, pools=args.pools, seeds=args.seeds,
                     workers=args.workers, out=args.out, resume=not args.no_resume,
                     progress=not args.no_progress, max_steps=args.max_steps)
    print_summary(frame)
    print(f"\n{len(frame)} episodes in {args.out}")
    if args.sign:
        print(f"signed: {sign_run(args.out, args.sign)}")
    return 0


def cmd_verify(args) -> int:
    """``srelib verify``: replay, re-run and check a run (its signature with ``--key``); print
    the verdict, each problem and claim; exit 1 when the run does not verify."""
    from srelib.runners.runs import verify_run

    check = verify_run(args.run_dir, key=args.key)
    print(check.summary())
    for title, lines in (("problems", check.problems), ("claims", check.claims)):
        if lines:
            shown = lines if args.all else lines[:args.limit]
            print(f"\n{title}:\n" + "\n".join(f"- {line}" for line in shown))
            if len(shown) < len(lines):
                print(f"- ... and {len(lines) - len(shown)} more (--all shows them)")
    return 0 if check.ok else 1


def cmd_report(args) -> int:
    """``srelib report``: a run's summary, an optional paired comparison, and its plots."""
    from srelib.runners.runs import load_run
    from srelib.results.store import run_directory

    frame = load_run(args.run_dir)
    if frame.empty:
        raise ValueError(f"{args.run_dir} holds no episodes yet")
    print_summary(frame)
    if args.compare:
        from srelib.analysis.stats import paired_difference, to_markdown

        names = args.compare.split(",")
        if len(names) != 2:
            raise ValueError(f"--compare takes two policy names A,B; got {args.compare!r}")
        print(f"\nPaired difference {names[0]} - {names[1]} (final score):\n")
        print(to_markdown(paired_difference(frame, *names), index=False))
    plots = output_dir(args.plots, "--plots") if args.plots else \
        output_dir(run_directory(args.run_dir) / "plots", "the run's plots folder")
    written = write_plots(frame, plots, compare=names if args.compare else None)
    print("\nplots: " + ", ".join(str(p) for p in written))
    if args.html:
        write_report(args.run_dir, args.html, verify=not args.no_verify, workers=args.workers)
    return 0


def write_report(run_dir, html, verify: bool = True, workers: int = 1) -> None:
    """Write the run's HTML report and say what it holds and weighs."""
    from srelib.report import write_html

    report = write_html(run_dir, html, verify=verify, workers=workers)
    verdict = ("not verified" if report.problems is None else "verified" if not report.problems
               else f"{len(report.problems)} problem(s): {report.problems[0]}")
    print(f"report: {report.path} ({report.bytes / 1e6:.2f} MB, {report.episodes} episodes, "
          f"{verdict})")


def print_summary(frame, policies: Sequence[str] | None = None) -> str:
    """Print the mean final score per task with its CI (``policies`` only, in that order),
    after a line for each non-standard setting the frame was scored under
    (``frame.attrs["nonstandard"]``); returns that Markdown."""
    from srelib.analysis.stats import summary_table, to_markdown

    table = summary_table(frame)
    text = to_markdown(table if policies is None else table[list(policies)])
    text = "".join(f"Scored under non-standard settings: {setting}\n\n"
                   for setting in frame.attrs.get("nonstandard") or ()) + text
    print("Mean final score per task [95% bootstrap CI]:\n")
    print(text)
    return text


def write_plots(frame, folder: Path, policies: Sequence[str] | None = None,
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
        save_figure(fig, folder / name)
    return [folder / name for name in figures]


def save_figure(fig, path: Path) -> None:
    """Write ``fig`` as a PNG at the demo's and the report's resolution."""
    fig.savefig(path, dpi=120)
