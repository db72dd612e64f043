"""The command line end to end, in real subprocesses: tasks, eval, kill and resume, report, demo;
bad input to every subcommand, in process."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from srelib.results import EPISODES_FILE, KEY_COLUMNS
from srelib.runners.runs import load_run

ROOT = Path(__file__).resolve().parents[1]


def _srelib(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "srelib", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_tasks_lists_every_task_and_pool():
    import srelib

    result = _srelib("tasks")
    assert result.returncode == 0, result.stderr
    for task in srelib.TASKS:
        assert task in result.stdout
    for pool in srelib.POOLS:
        assert f"| {pool} " in result.stdout


def test_unknown_policy_is_a_clear_error_listing_the_names(tmp_path):
    result = _srelib("eval", "--policy", "genius", "--out", tmp_path / "r")
    assert result.returncode == 2
    assert "unknown policy 'genius'" in result.stderr
    assert "heuristic-revert" in result.stderr and "oracle-random" in result.stderr


def _eval_error(tmp_path, *args):
    """Run ``srelib eval`` expecting a usage error; returns its stderr."""
    result = _srelib("eval", "--policy", "null", "--tasks", "memory_leak", "--no-progress",
                     *args)
    assert result.returncode == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("usage: srelib eval "), "eval errors print eval's usage"
    return result.stderr.strip().splitlines()[-1]


def test_out_that_is_a_file_is_named_in_one_line(tmp_path):
    (tmp_path / "taken").write_text("keep me")
    line = _eval_error(tmp_path, "--out", tmp_path / "taken")
    assert line == f"srelib eval: error: --out {tmp_path / 'taken'} is a file, not a directory"
    assert (tmp_path / "taken").read_text() == "keep me"


def test_out_under_a_file_names_the_file(tmp_path):
    (tmp_path / "taken").write_text("")
    line = _eval_error(tmp_path, "--out", tmp_path / "taken" / "run" / "deeper")
    assert line.endswith(f"cannot be created: {tmp_path / 'taken'} is a file")


def test_unwritable_out_names_the_path(tmp_path):
    # /sys is mounted read-only: not even root can create a folder there
    line = _eval_error(tmp_path, "--out", "/sys/srelib-cli-test/run")
    assert line.startswith("srelib eval: error: ") and "/sys/srelib-cli-test" in line
    assert "not permitted" in line or "not writable" in line


def test_report_and_demo_check_their_output_folders_too(tmp_path):
    (tmp_path / "taken").write_text("")
    demo = _srelib("demo", "--out", tmp_path / "taken", "--no-progress")
    assert demo.returncode == 2 and "Traceback" not in demo.stderr
    assert demo.stderr.startswith("usage: srelib demo ")
    assert f"--out {tmp_path / 'taken'} is a file, not a directory" in demo.stderr
    report = _srelib("report", tmp_path / "taken")
    assert report.returncode == 2 and report.stderr.startswith("usage: srelib report ")
    assert "is not a run directory" in report.stderr


def test_seed_count_must_be_at_least_one(tmp_path):
    for count in ("0", "-3"):
        line = _eval_error(tmp_path, "--seeds", count, "--out", tmp_path / "r")
        assert line.endswith(f"a seed count must be between 1 and 1000000, got '{count}'")
    line = _eval_error(tmp_path, "--seeds", "4,-1", "--out", tmp_path / "r")
    assert "a seed list holds 1 to 1000000 seeds in [0, " in line
    assert not (tmp_path / "r").exists(), "a rejected command creates nothing"


def test_agent_training_needs_a_positive_number_of_epochs(tmp_path):
    for epochs in ("0", "-1", "nan", "three"):
        result = _srelib("agent", "train", "--epochs", epochs, "--out", tmp_path / "agent")
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert "srelib agent train: error: argument --epochs: epochs must be" in result.stderr
    assert not (tmp_path / "agent").exists(), "a rejected command creates nothing"


def test_a_rejected_grid_creates_no_run_directory(tmp_path):
    line = _eval_error(tmp_path, "--tasks", "no_such_task", "--out", tmp_path / "r")
    assert "unknown tasks ['no_such_task']" in line
    assert not (tmp_path / "r").exists()


def test_pool_and_worker_errors_offer_only_what_a_command_line_can_say(tmp_path):
    line = _eval_error(tmp_path, "--pools", "C,Z", "--out", tmp_path / "r")
    assert line.endswith("unknown pools ['Z']; valid pools: A, B, C, D")
    assert "None" not in line
    line = _eval_error(tmp_path, "--workers", "0", "--out", tmp_path / "r")
    assert "--workers: must be a whole number from 1 to 256, got '0'" in line


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("srelib")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "eval" in result.stdout and "demo" in result.stdout


def test_eval_then_report(tmp_path):
    run = tmp_path / "run"
    result = _srelib("eval", "--policy", "heuristic", "--policy", "null", "--tasks",
                     "memory_leak,info_ordering", "--pools", "B,C", "--seeds", "3", "--out", run,
                     "--no-progress")
    assert result.returncode == 0, result.stderr
    frame = load_run(run)
    assert len(frame) == 2 * 2 * 2 * 3
    assert set(frame["policy"]) == {"heuristic", "null"}
    assert "mean over tasks" in result.stdout and "| memory_leak" in result.stdout
    report = _srelib("report", run / EPISODES_FILE, "--compare", "heuristic,null")
    assert report.returncode == 0, report.stderr  # the episodes.jsonl names its run too
    assert load_run(run / EPISODES_FILE).equals(frame)
    assert "Paired difference heuristic - null" in report.stdout
    assert "| all " in report.stdout
    bad = _srelib("report", run, "--compare", "heuristic,nobody")
    assert bad.returncode == 2 and "policies: ['heuristic', 'null']" in bad.stderr
    assert bad.stderr.startswith("usage: srelib report ")
    for name in ("score_distributions", "score_ecdf", "components", "resolved",
                 "steps_per_phase", "paired_difference"):
        assert (run / "plots" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert not (run / "plots" / "parse_failures.png").exists()  # scripted replies always parse


def test_killed_eval_resumes_to_a_complete_run_without_duplicates(tmp_path):
    run = tmp_path / "run"
    args = ["eval", "--policy", "heuristic-revert", "--policy", "oracle-random", "--tasks", "all",
            "--pools", "C,D", "--seeds", "15", "--out", str(run), "--no-progress"]
    total = 2 * 10 * 15
    proc = subprocess.Popen([sys.executable, "-m", "srelib", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    episodes = run / EPISODES_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if episodes.exists() and episodes.read_text().count("\n") >= 20:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    interrupted = len(load_run(run))
    assert 20 <= interrupted < total
    result = _srelib(*args)
    assert result.returncode == 0, result.stderr
    frame = load_run(run)
    assert len(frame) == total
    assert not frame.duplicated(list(KEY_COLUMNS)).any()
    assert episodes.read_text().count("\n") == total


def test_demo_writes_tables_and_plots(tmp_path):
    out = tmp_path / "results"
    result = _srelib("demo", "--out", out, "--seeds", "1", "--workers", "2", "--no-progress",
                     "--generated-tasks", "2")
    assert result.returncode == 0, result.stderr
    read = {"keep_default_na": False, "na_values": [""]}  # "null" is a policy name, not NaN
    episodes = pd.read_csv(out / "episodes.csv", **read)
    assert set(episodes["policy"]) == {"null", "random", "oracle-random", "heuristic",
                                       "heuristic-revert", "heuristic-partial-revert", "reference"}
    assert {"culprit_rank", "bad_file_edited"} <= set(episodes.columns)
    ceiling = pd.read_csv(out / "ceiling.csv", **read)
    assert {"oracle", "null", "heuristic"} <= set(ceiling["handoff"])
    ladder = pd.read_csv(out / "ladder.csv", **read)
    assert list(dict.fromkeys(ladder["suite"])) == ["classic:train", "classic:heldout",
                                                    "generated:train", "generated:heldout"]
    top = ladder[ladder.policy == "rung:patch"]
    from srelib.training.agent import find_agent

    rows = 12 + (find_agent() is not None)  # the saved agent climbs the ladder where it exists
    assert (top["full"] == 1).all() and (ladder.groupby("suite").size() == rows).all()
    assert {"aimed-repair", "heuristic-aimed-repair"} <= set(ladder["policy"])
    summary = (out / "summary.md").read_text()
    assert "mean over tasks" in summary and "culprit_top1" in summary and "hop_distance" in summary
    assert "No-answer baseline" in (out / "ceiling.md").read_text()
    assert "Oracle over null handoff" in (out / "ceiling.md").read_text()
    for name in ("score_distributions", "components", "resolved", "paired_difference",
                 "ceiling_gap", "repair_ladder", "localisation"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert "wall_s" not in episodes.columns  # timings would change the CSV on every run
    assert "Oracle-P1 ceiling" in result.stdout and "mean over tasks" in result.stdout


HUGE = "1" + "0" * 30
#: Bad input for each subcommand: missing, wrong-type and out-of-range arguments.
BAD_INPUT = [
    ["tasks", "--suite", "x"], ["tasks", "check"], ["tasks", "check", "/nonexistent"],
    ["eval"], ["eval", "--policy", "null"], ["eval", "--policy", "null", "--out", "{out}", "--seeds", HUGE],
    ["eval", "--policy", "null", "--out", "{out}", "--seeds", "abc"],
    ["eval", "--policy", "null", "--out", "{out}", "--seeds", "1," + HUGE],
    ["eval", "--policy", "null", "--out", "{out}", "--workers", HUGE],
    ["eval", "--policy", "null", "--out", "{out}", "--max-steps", "1.5"],
    ["eval", "--policy", "null", "--out", "{out}", "--tasks", "nope"],
    ["eval", "--policy", "null", "--out", "{out}", "--sandbox", "off"],
    ["report"], ["report", "/nonexistent"], ["demo", "--seeds", HUGE, "--out", "{out}"],
    ["demo", "--workers", "0", "--out", "{out}"], ["agent"], ["agent", "train", "--epochs", "inf"],
    ["agent", "train", "--epochs", "x"], ["agent", "train", "--seeds", HUGE],
    ["agent", "measure", "/nonexistent"], ["agent", "measure", "--seeds", "-1"],
    ["serve", "--port", "99999"], ["serve", "--port", "abc"], ["serve", "--max-sessions", HUGE],
    ["serve", "--idle-timeout", "0"], ["serve", "--host", "999.1.1.1"], ["serve", "--host", "x" * 300],
    ["serve", "--max-per-client", "0"], ["serve", "--read-timeout", "1e9"],
]


@pytest.mark.parametrize("argv", BAD_INPUT, ids=lambda argv: " ".join(argv)[:60])
def test_bad_input_is_one_line_and_exit_status_2(argv, tmp_path, capsys):
    from srelib.cli import main

    argv = [a.replace("{out}", str(tmp_path / "out")) for a in argv]
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"srelib {argv[0]}"), err
    assert not (tmp_path / "out").exists()


def test_grading_refused_by_a_weak_sandbox_is_one_line_and_unsafe_is_recorded(tmp_path, capsys,
                                                                              monkeypatch):
    from srelib.cli import main
    from srelib.env.grading.sandbox import isolate as sandbox

    monkeypatch.setattr(sandbox, "available_levels", lambda: ("rlimits-only",))
    monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    argv = ["eval", "--policy", "reference", "--tasks", "memory_leak", "--pools", "C", "--seeds", "1",
            "--no-progress", "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bubblewrap" in err[0] and "--sandbox=unsafe" in err[0]
    assert main(argv + ["--sandbox", "unsafe"]) == 0
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["sandbox"] == "unsafe" and run["isolation"] == "rlimits-only" and not run["verified"]
    episode = json.loads((tmp_path / "run" / EPISODES_FILE).read_text().splitlines()[0])
    assert episode["score"]["patch"]["verified"] is False


def test_version_prints_the_single_sourced_version(capsys):
    from srelib._version import __version__
    from srelib.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"srelib {__version__}"
