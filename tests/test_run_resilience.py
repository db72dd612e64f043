"""The run store and the worker pool under real process faults: two writers on one grid, a
parent killed with SIGKILL, a torn line in the middle of episodes.jsonl."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import srelib
from srelib.policies import NullPhase1Policy
from srelib.results import EPISODES_FILE, CorruptLinesWarning, Episode
from srelib.runners.runs import load_run

ROOT = Path(__file__).resolve().parents[1]
GRID = dict(tasks="all", pools=["A"], seeds=6, progress=False)


def _python(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


WRITER = """
    import sys
    import srelib
    from srelib.policies import NullPhase1Policy

    srelib.evaluate({"null": NullPhase1Policy}, tasks="all", pools=["A"], seeds=6,
                    progress=False, out=sys.argv[1])
"""


def test_two_processes_filling_one_grid_store_each_episode_once(tmp_path):
    writers = [_python(WRITER, str(tmp_path)) for _ in range(2)]
    for writer in writers:
        _, err = writer.communicate(timeout=240)
        assert writer.returncode == 0, err
    lines = (tmp_path / EPISODES_FILE).read_text().splitlines()
    keys = [tuple(json.loads(line)[k] for k in ("policy", "task", "pool", "mode", "seed"))
            for line in lines]
    assert len(keys) == len(set(keys)) == len(srelib.POOLS["A"].tasks) * 6


PARENT = """
    import os, sys, time
    import srelib
    import srelib.runners.workers

    srelib.runners.workers.exit_with_parent.__kwdefaults__["use_prctl"] = sys.argv[2] == "prctl"

    class Slow:
        def __call__(self, observation, phase, task_name):
            with open(os.path.join(sys.argv[1], str(os.getpid())), "w"):
                pass
            time.sleep(0.2)
            return {"action_type": "view_alerts"}

    srelib.evaluate({"slow": Slow}, tasks=["memory_leak"], pools=["A"], seeds=8, workers=2,
                    progress=False)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a zombie has exited; only its parent entry is left


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
@pytest.mark.parametrize("how", ["prctl", "watch-thread"])
def test_workers_exit_when_their_parent_is_killed(tmp_path, how):
    parent = _python(PARENT, str(tmp_path), how)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
        assert parent.poll() is None, parent.communicate()[1]
        time.sleep(0.05)
    workers = [int(p.name) for p in tmp_path.iterdir()]
    assert len(workers) == 2 and parent.pid not in workers
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [pid for pid in workers if _alive(pid)]
    for pid in survivors:  # leave nothing behind if the test fails
        os.kill(pid, signal.SIGKILL)
    assert not survivors


def test_a_torn_line_in_the_middle_is_skipped_then_run_again_on_resume(tmp_path):
    first = srelib.evaluate({"null": NullPhase1Policy}, out=tmp_path, **GRID)
    path = tmp_path / EPISODES_FILE
    lines = path.read_bytes().split(b"\n")
    torn = json.loads(lines[5])["seed"], Episode.from_json(lines[5]).public_task  # as frames show it
    lines[5] = lines[5][:len(lines[5]) // 2]
    path.write_bytes(b"\n".join(lines))
    with pytest.warns(CorruptLinesWarning, match="skipped 1 corrupt line"):
        assert len(load_run(tmp_path)) == len(first) - 1
    resumed = srelib.evaluate({"null": NullPhase1Policy}, out=tmp_path, **GRID)
    assert len(resumed) == len(first) and torn in set(zip(resumed.seed, resumed.task))
    assert all(json.loads(line) for line in path.read_text().splitlines())
    assert len(path.read_text().splitlines()) == len(first)
