"""The command line end to end, in real subprocesses: tasks, eval, kill and resume, report, demo."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from srelib.results import EPISODES_FILE, KEY_COLUMNS, load_run

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
    report = _srelib("report", run, "--compare", "heuristic,null")
    assert report.returncode == 0, report.stderr
    assert "Paired difference heuristic - null" in report.stdout
    assert "| all " in report.stdout
    bad = _srelib("report", run, "--compare", "heuristic,nobody")
    assert bad.returncode == 2 and "policies: ['heuristic', 'null']" in bad.stderr
    for name in ("score_distributions", "score_ecdf", "components", "steps_per_phase",
                 "parse_failures"):
        assert (run / "plots" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


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
    result = _srelib("demo", "--out", out, "--seeds", "1", "--workers", "2", "--no-progress")
    assert result.returncode == 0, result.stderr
    read = {"keep_default_na": False, "na_values": [""]}  # "null" is a policy name, not NaN
    episodes = pd.read_csv(out / "episodes.csv", **read)
    assert set(episodes["policy"]) == {"null", "random", "oracle-random", "heuristic",
                                       "heuristic-revert", "reference"}
    ceiling = pd.read_csv(out / "ceiling.csv", **read)
    assert {"oracle", "null", "heuristic"} <= set(ceiling["handoff"])
    for name in ("score_distributions", "components", "ceiling_gap"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert "Oracle-P1 ceiling" in result.stdout and "mean over tasks" in result.stdout
