"""The spare sandbox: started ahead, used by exactly one grading, never shared, never stale.

Real sandboxes throughout (bubblewrap where this machine has it): the probes below run in the
same runner and sandbox as a patch's hidden tests.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

from srelib.env.grading import probe_run
from srelib.env.grading.sandbox import isolate as sandbox, spare
from srelib.env.grading.errors import GradingError
from srelib.env.grading.probe_run import run_probes
from srelib.env.grading.sandbox.isolate import grading_level

LEVEL = grading_level()[0]
MARK = "def probe_mark():\n    with open('left_behind.txt', 'w') as out:\n        out.write('x')\n    return 1\n"
LOOK = "import os\n\ndef probe_look():\n    return os.path.exists('left_behind.txt')\n"
ADD = "from calc import add\n\ndef probe_add(rng):\n    a, b = rng.randrange(100), rng.randrange(100)\n    return [a, b, add(a, b)]\n"
CALC = {"calc.py": "def add(a, b):\n    return a + b\n"}
LOADED = "import sys\n\ndef probe_mods():\n    return sorted(sys.modules)\n"
OWN = ("import dataclasses, typing\n\n"
       "def probe_own():\n    return [dataclasses.MINE, typing.MINE]\n")


def _wait_for_spare(timeout_s: float = 10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        current = spare._spare
        if current is not None:
            return current[1]
        time.sleep(0.01)
    raise AssertionError("no spare sandbox was started")


def _add(timeout_s: float = 10.0) -> list[int]:
    seen, timed_out = run_probes(CALC, {"test_add.py": ADD}, timeout_s, LEVEL, seed=7)
    assert not timed_out
    a, b, total = seen["test_add.py::test_add"].value
    assert total == a + b
    return seen["test_add.py::test_add"].value


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv(spare.SPARE_ENV, "1")
    spare.discard()
    yield
    spare.discard()


def test_a_grading_takes_the_spare_and_another_is_started_for_the_next():
    _add()
    first = _wait_for_spare()
    assert first.alive()
    _add()
    second = _wait_for_spare()
    assert second is not first and not first.alive()  # used once, then ended with its grading


def test_nothing_a_grading_leaves_behind_reaches_the_next():
    marked, _ = run_probes({}, {"test_mark.py": MARK}, 10, LEVEL, seed=1)
    assert marked["test_mark.py::test_mark"].value == 1
    _wait_for_spare()
    looked, _ = run_probes({}, {"test_look.py": LOOK}, 10, LEVEL, seed=1)
    assert looked["test_look.py::test_look"].value is False


def test_the_spare_imports_the_common_standard_modules_before_its_grading():
    assert {"dataclasses", "typing"} <= set(probe_run.common_modules())
    _add()
    _wait_for_spare()
    seen, _ = run_probes({}, {"test_mods.py": LOADED}, 10, LEVEL, seed=1)
    assert set(seen["test_mods.py::test_mods"].value) >= {"dataclasses", "typing"}


def test_a_repository_module_named_like_one_imported_ahead_is_the_repositorys():
    """A spare imported ``dataclasses`` and ``typing`` before it knew its repository; a
    repository that has modules of those names imports its own."""
    own = {"dataclasses.py": "MINE = 'dataclasses'\n", "typing/__init__.py": "MINE = 'typing'\n"}
    on_demand, _ = run_probes(own, {"test_own.py": OWN}, 10, LEVEL, seed=1)
    _wait_for_spare()
    from_spare, _ = run_probes(own, {"test_own.py": OWN}, 10, LEVEL, seed=1)
    for seen in (on_demand, from_spare):
        assert seen["test_own.py::test_own"].value == ["dataclasses", "typing"]


def test_a_spare_for_another_timeout_is_ended_not_used():
    _add(timeout_s=10)
    stale = _wait_for_spare()
    _add(timeout_s=20)  # the CPU limit is set at start: this one needs a sandbox of its own
    assert not stale.alive()


def test_turned_off_no_spare_is_kept(monkeypatch):
    monkeypatch.setenv(spare.SPARE_ENV, "0")
    _add()
    time.sleep(0.2)
    assert spare._spare is None


def test_a_spare_outlives_the_thread_that_asked_for_it():
    """bubblewrap dies with the thread that started it; spares are started by one that stays."""
    worker = threading.Thread(target=_add)
    worker.start()
    worker.join()
    kept = _wait_for_spare()
    time.sleep(0.1)
    assert kept.alive()
    _add()


def test_concurrent_gradings_each_get_their_own_sandbox():
    results, errors = [], []

    def grade():
        try:
            results.append(_add())
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=grade) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 4


def test_a_forked_child_forgets_the_parents_spare_and_grades_with_its_own():
    _add()
    parents = _wait_for_spare()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no spare of its parent's, and grading still works
        ok = spare._spare is None
        try:
            _add()
        except BaseException:  # noqa: BLE001 - reported through the exit status
            ok = False
        os.write(write_end, b"1" if ok else b"0")
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    assert os.read(read_end, 1) == b"1"
    os.close(read_end)
    assert parents.alive()  # the child's exit did not end it
    _add()


def _kill(started) -> None:
    """End a started sandbox from outside, as ``kill -9`` of its pid would."""
    os.killpg(started.proc.pid, signal.SIGKILL)
    started.proc.wait()


def test_a_spare_killed_before_it_is_taken_is_not_used():
    _add()
    doomed = _wait_for_spare()
    _kill(doomed)  # as kill -9 of its pid would
    _add()


def test_a_spare_killed_as_it_is_taken_is_replaced_not_graded_empty(monkeypatch):
    """Killed between take()'s check that it runs and the grading's input: no observations
    would come back (every test failing), so the grading runs again in a sandbox of its own."""
    _add()
    doomed = _wait_for_spare()
    checked = doomed.alive

    def dies_after_the_check() -> bool:
        running = checked()
        _kill(doomed)
        return running

    monkeypatch.setattr(doomed, "alive", dies_after_the_check)
    _add()
    assert doomed.proc.returncode == -signal.SIGKILL


def _counted_launches(monkeypatch, kill: bool) -> list:
    """Every sandbox the probe runner starts (each killed at once when ``kill``), no spare."""
    monkeypatch.setenv(spare.SPARE_ENV, "0")
    launched, real = [], probe_run._start_runner

    def start(level, timeout_s, ahead=()):
        started = real(level, timeout_s, ahead)
        launched.append(started)
        if kill:
            _kill(started)
        return started

    monkeypatch.setattr(probe_run, "_start_runner", start)
    return launched


def test_a_sandbox_that_never_reads_its_input_is_retried_once_within_the_timeout(monkeypatch):
    """...and then, no patched code having run, it is the grader's failure, not a verdict."""
    launched = _counted_launches(monkeypatch, kill=True)
    begun = time.monotonic()
    with pytest.raises(GradingError, match="sandbox_killed"):
        run_probes(CALC, {"test_add.py": ADD}, 3.0, LEVEL, seed=7)
    assert len(launched) == 2
    assert time.monotonic() - begun < 3.0


def test_a_runner_that_read_its_input_and_died_is_not_retried(monkeypatch):
    """What the input makes the runner do (here: write a file over the size limit, so the
    kernel kills it) cannot buy a second run."""
    launched = _counted_launches(monkeypatch, kill=False)
    big = b"x" * (sandbox.LIMITS["RLIMIT_FSIZE"] + 1)
    seen, timed_out = run_probes({**CALC, "blob.bin": big}, {"test_add.py": ADD}, 5.0, LEVEL, seed=7)
    assert seen == {} and not timed_out and len(launched) == 1


def test_a_prepared_sandbox_times_out_from_its_input_not_from_its_start():
    started = sandbox.prepare([sandbox.python(), "-I", "-S", "-c", "import sys; print(sys.stdin.read())"],
                              timeout_s=5)
    time.sleep(1.5)
    result = started.finish(b"late" * 100_000, timeout_s=1.0)
    assert not result.timed_out and result.returncode == 0
    assert result.stdout.strip() == b"late" * 100_000


def test_a_command_that_never_reads_its_input_cannot_block_the_caller():
    started = sandbox.prepare([sandbox.python(), "-I", "-S", "-c", "import time; time.sleep(60)"],
                              timeout_s=5)
    begun = time.monotonic()
    result = started.finish(b"x" * (4 << 20), timeout_s=1.0)  # far more than a pipe holds
    assert result.timed_out and time.monotonic() - begun < 5


def test_a_reader_gone_does_not_kill_a_caller_that_restored_sigpipe():
    """A spare that died, or a command that exits unread: EPIPE, where SIGPIPE's default (which
    a program may restore) would end the whole grading process."""
    code = ("import signal, time\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\n"
            "from srelib.env.grading.sandbox import isolate as sandbox\n"
            "started = sandbox.prepare([sandbox.python(), '-c', 'pass'], timeout_s=5)\n"
            "while started.alive():\n    time.sleep(0.01)\n"
            "print(started.finish(b'x' * (1 << 20), timeout_s=5).returncode)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "0", done


def _boxes() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("srelib-box-")}


@pytest.mark.parametrize("level", sandbox.available_levels())
def test_a_prepared_sandbox_writes_in_its_own_scratch_and_leaves_nothing_behind(level):
    before = _boxes()
    started = sandbox.prepare([sandbox.python(), "-I", "-S", "-c",
                               "import os; open('f', 'w').write('x'); print(os.listdir('.'))"],
                              timeout_s=5, level=level)
    result = started.finish(b"", timeout_s=5)
    assert result.returncode == 0 and result.stdout.strip() == b"['f']"
    assert _boxes() == before


def _grade_in_worker(level: str, folder: str) -> int:
    """In a worker process: grade once at ``level`` with temporary folders made in ``folder``;
    the pid of the spare that grading left for the next."""
    tempfile.tempdir = folder
    seen, _ = run_probes(CALC, {"test_add.py": ADD}, 10, level, seed=7)
    assert seen["test_add.py::test_add"].value[2] == sum(seen["test_add.py::test_add"].value[:2])
    return _wait_for_spare().proc.pid


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("level", sandbox.available_levels())
def test_a_multiprocessing_worker_that_graded_leaves_no_process_or_folder(level):
    """Its workers exit without atexit: the spare it keeps is ended all the same."""
    folder = tempfile.mkdtemp(prefix="srelib-test-worker-")
    os.chmod(folder, 0o755)  # reachable by the sandbox uid
    try:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            pid = pool.submit(_grade_in_worker, level, folder).result()
        deadline = time.monotonic() + 5
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(pid) and os.listdir(folder) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif("unshare" not in sandbox.available_levels(), reason="no unshare level here")
def test_a_grader_killed_outright_leaves_no_unshare_root_behind():
    """The folder the unshare level builds its root on is removed from inside once pivoted,
    not by the grader, which a SIGKILL stops before any cleanup."""
    folder = tempfile.mkdtemp(prefix="srelib-test-killed-")
    try:
        pid = os.fork()
        if pid == 0:
            tempfile.tempdir = folder
            sandbox.prepare([sandbox.python(), "-I", "-S", "-c", "import sys; sys.stdin.read()"],
                            timeout_s=5, level="unshare")
            os.kill(os.getpid(), signal.SIGKILL)
        os.waitpid(pid, 0)
        deadline = time.monotonic() + 5
        while os.listdir(folder) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.listdir(folder) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("level", sandbox.available_levels())
def test_a_process_that_exits_while_a_spare_is_being_started_leaves_no_folder(level):
    """The spare being started at exit (its folder made, not yet handed over) is waited for
    and ended."""
    folder = tempfile.mkdtemp(prefix="srelib-test-exit-")
    os.chmod(folder, 0o755)  # reachable by the sandbox uid
    code = ("import time\nfrom srelib.env.grading.sandbox import isolate as sandbox, spare\n"
            "def launch():\n"
            f"    started = sandbox.prepare([sandbox.python(), '-c', 'input()'], timeout_s=5, level={level!r})\n"
            "    time.sleep(0.5)  # still being started when the process exits\n"
            "    return started\n"
            "spare.take('key', launch).discard()\n")
    try:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60,
                       env={**os.environ, "TMPDIR": folder, spare.SPARE_ENV: "1"})
        assert os.listdir(folder) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
