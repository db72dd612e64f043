"""Red team, issue 46 parts 1-3: the system-call filter and private keyrings, gradings that
cannot touch each other, and grader failures that never become verdicts. Real bubblewrap, real
unshare, real cgroups, a real full tmpfs; the only stand-in is a runner that kills itself
before reading its input (named where it is used)."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import tempfile
import threading
import time
import warnings
from pathlib import Path

import pytest

from srelib.env.grading import pipeline as patching, probe_run
from srelib.env.grading.sandbox import isolate as sandbox, slots as sandbox_slots, spare
from srelib.env.grading.errors import GradingError
from srelib.env.tasks.lookup import load_repo
from srelib.env.phase2.repos import unified_diff
from srelib.env.simulation.scenarios import DATA_DIR
from srelib.env.grading.sandbox.seccomp import DENIED, ENOSYS_CALLS, syscall_number

HOLDING = [lv for lv in sandbox.available_levels() if lv in sandbox.HOLDING_LEVELS]
BATCH = "orders/handlers/batch.py"
FIX = (DATA_DIR / "memory_leak" / "fix" / BATCH).read_text()
pytestmark = pytest.mark.skipif(not HOLDING, reason="no holding sandbox level on this machine")


def _fix_diff(extra: str = "") -> str:
    tree = dict(load_repo("orders_batch").tree)
    return unified_diff(tree, {**tree, BATCH: FIX + extra})


@pytest.fixture(params=HOLDING)
def level(request, monkeypatch):
    """Each holding level, as the level patch grading runs at."""
    monkeypatch.setattr(sandbox, "isolation_level", lambda: request.param)
    patching._MEMO.clear()
    yield request.param
    spare.discard()
    patching._MEMO.clear()


@pytest.fixture
def scratch():
    with tempfile.TemporaryDirectory(prefix="srelib-test-v4-") as tmp:
        os.chmod(tmp, 0o755)
        yield Path(tmp)


def _run(level: str, script: str, scratch: Path, params, timeout_s: float = 20.0) -> dict:
    result = sandbox.run_isolated([sandbox.python(), "-I", "-S", "-c", script], scratch,
                                  stdin=json.dumps(params).encode(), timeout_s=timeout_s,
                                  level=level)
    lines = result.stdout.decode().strip().splitlines()
    assert result.returncode == 0 and lines, result
    return json.loads(lines[-1])


# ----------------------------------------------------------------- 1. the system-call filter

#: Arguments for each denied call that are harmless where it is allowed (outside, as root):
#: there it succeeds or fails with something other than EPERM. Strings are passed as C strings.
CALLS = {
    "keyctl": [0, -3, 0], "add_key": ["user", "srelib-probe", "x", 1, -2],
    "request_key": ["user", "srelib-no-such-key", 0, 0], "bpf": [0, 0, 0],
    "perf_event_open": [0, 0, -1, -1, 0], "userfaultfd": [-1],
    "io_uring_setup": [0, 0], "io_uring_enter": [-1, 0, 0, 0, 0, 0],
    "io_uring_register": [-1, 0, 0, 0], "ptrace": [2, 0x7FFFFFFF, 0, 0],
    "process_vm_readv": [0x7FFFFFFF, 0, 0, 0, 0, 0], "process_vm_writev": [0x7FFFFFFF, 0, 0, 0, 0, 0],
    "process_madvise": [-1, 0, 0, 0, 0], "kcmp": [0, 0, -1, 0, 0], "pidfd_getfd": [-1, 0, 0],
    "mount": [0, 0, 0, 0, 0], "umount2": ["/srelib-no-such-dir", 0],
    "pivot_root": ["/srelib-no-such-dir", "/srelib-no-such-dir"], "chroot": ["/srelib-no-such-dir"],
    "fsopen": [0, 0], "fsconfig": [-1, 0, 0, 0, 0], "fsmount": [-1, 0, 0], "fspick": [-1, 0, 0],
    "move_mount": [-1, 0, -1, 0, 0], "open_tree": [-1, 0, 0], "mount_setattr": [-1, 0, 0, 0, 0],
    "unshare": [0], "setns": [-1, 0], "kexec_load": [0, 0, 0, 0xFFFF0000],
    "kexec_file_load": [-1, -1, 0, 0, 0xFFFF0000], "reboot": [0, 0, 0, 0],
    "init_module": [0, 0, 0], "finit_module": [-1, 0, 0], "delete_module": ["srelib_no_such", 0],
    "create_module": [0, 0], "get_kernel_syms": [0], "query_module": [0, 0, 0, 0, 0],
    "swapon": [0, 0], "swapoff": [0], "quotactl": [0, 0, 0, 0], "quotactl_fd": [-1, 0, 0, 0],
    "acct": [0], "nfsservctl": [0, 0, 0], "lookup_dcookie": [0, 0, 0], "sysfs": [1, 0],
    "_sysctl": [0], "ustat": [0, 0], "uselib": [0], "syslog": [10, 0, 0], "vhangup": [],
    "fanotify_init": [0xFFFFFFFF, 0], "open_by_handle_at": [-1, 0, 0],
    "name_to_handle_at": [-1, 0, 0, 0, 0], "iopl": [4], "ioperm": [0x10000, 1, 1],
    "settimeofday": [0, 0], "clock_settime": [0, 0], "clock_adjtime": [-1, 0], "adjtimex": [0],
    "sethostname": [0, -1], "setdomainname": [0, -1], "mbind": [0, 0, 0, 0, 0, 0],
    "set_mempolicy": [0, 0, 0], "get_mempolicy": [0, 0, 0, 0, 0],
    "migrate_pages": [0x7FFFFFFF, 0, 0, 0], "move_pages": [0, 0, 0, 0, 0, 0],
    "clone3": [0, 0],
}
# clone with one namespace flag and CLONE_THREAD without CLONE_SIGHAND: EINVAL where allowed
CLONE_THREAD = 0x00010000
CONDITIONAL = {f"clone {name}": ("clone", [bit | CLONE_THREAD, 0, 0, 0, 0])
               for name, bit in __import__("srelib.env.grading.sandbox.seccomp", fromlist=["x"])
               .CLONE_NAMESPACES.items()}
CONDITIONAL["personality ADDR_NO_RANDOMIZE"] = ("personality", [0x0040000])
CONDITIONAL["socket AF_VSOCK"] = ("socket", [40, 1, 0])

SYSCALLS = r"""
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
for label, (number, args) in json.loads(sys.stdin.read()).items():
    cargs = [ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a) for a in args]
    ctypes.set_errno(0)
    code = libc.syscall(ctypes.c_long(number), *cargs)
    out[label] = 0 if code >= 0 else ctypes.get_errno()
print(json.dumps(out))
"""


def _calls() -> dict[str, list]:
    calls = {}
    for name, args in CALLS.items():
        number = syscall_number(name)
        if number is not None:  # not a system call of this architecture
            calls[name] = [number, args]
    for label, (name, args) in CONDITIONAL.items():
        calls[label] = [syscall_number(name), args]
    return calls


def test_every_denied_call_is_listed_with_harmless_arguments():
    assert set(DENIED) | set(ENOSYS_CALLS) == set(CALLS)


def test_each_denied_call_fails_inside_with_eperm_and_not_so_outside(scratch, level):
    calls = _calls()
    outside = subprocess.run([sandbox.python(), "-I", "-S", "-c", SYSCALLS],
                             input=json.dumps(calls).encode(), capture_output=True, timeout=60,
                             start_new_session=True)  # no terminal for vhangup to hang up
    assert outside.returncode == 0, outside.stderr
    outside_errnos = json.loads(outside.stdout)
    inside = _run(level, SYSCALLS, scratch, calls)
    wrong = {label: errno.errorcode.get(code, code) for label, code in inside.items()
             if code != (errno.ENOSYS if label in ENOSYS_CALLS else errno.EPERM)}
    assert wrong == {}, f"not denied inside at {level}: {wrong}"
    eperm_outside = sorted(label for label, code in outside_errnos.items() if code == errno.EPERM)
    assert eperm_outside == [], f"these fail with EPERM outside too, proving nothing: {eperm_outside}"


FILTERED = r"""
import json, os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
pid = os.fork()  # clone without namespace flags still works
if pid == 0:
    os._exit(7)
_, code = os.waitpid(pid, 0)
print(json.dumps({"seccomp": status["Seccomp"].strip(), "child": os.waitstatus_to_exitcode(code)}))
"""


def test_the_filter_is_loaded_and_ordinary_processes_still_start(scratch, level):
    seen = _run(level, FILTERED, scratch, {})
    assert seen == {"seccomp": "2", "child": 7}


KEYRINGS = r"""
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
p = json.loads(sys.stdin.read())
out = {}
for label, (number, args) in p["calls"].items():
    cargs = [ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a) for a in args]
    code = libc.syscall(ctypes.c_long(number), *cargs)
    out[label] = 0 if code >= 0 else ctypes.get_errno()
print(json.dumps(out))
"""


def _keyctl(*args) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    cargs = [ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a) for a in args]
    return libc.syscall(*cargs)


def test_the_graders_keyrings_are_out_of_reach(scratch, level):
    """The issue's canary: a key in the grader's session keyring can be neither found nor read
    from inside, and nothing added inside reaches the grader's session or user keyring."""
    add_key, keyctl = syscall_number("add_key"), syscall_number("keyctl")
    canary = _keyctl(add_key, "user", "srelib-canary", "secret", 6, -3)
    assert canary > 0, os.strerror(ctypes.get_errno())
    try:
        calls = {"search session": [keyctl, [10, -3, "user", "srelib-canary", 0]],  # KEYCTL_SEARCH
                 "read canary": [keyctl, [11, canary, 0, 0]],  # KEYCTL_READ
                 "add to session": [add_key, ["user", "srelib-planted", "x", 1, -3]],
                 "add to user": [add_key, ["user", "srelib-planted", "x", 1, -4]]}
        seen = _run(level, KEYRINGS, scratch, {"calls": calls})
        assert seen == dict.fromkeys(calls, errno.EPERM)
        for ring in (-3, -4):  # nothing planted in the grader's session or user keyring
            assert _keyctl(keyctl, 10, ring, "user", "srelib-planted", 0) < 0
    finally:
        _keyctl(keyctl, 3, canary)  # KEYCTL_REVOKE


# ----------------------------------------------------------------- 2. gradings apart

HOSTILE = r"""
import json, os, sys, time
p = json.loads(sys.stdin.read())
children = 0
while True:  # fill this grading's process limit with sleepers
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(p["hold_s"])
        os._exit(0)
    children += 1
hog = b"x" * p["hog_bytes"]  # and hold memory
print(json.dumps({"children": children}), flush=True)
time.sleep(p["hold_s"])
"""


def test_a_hostile_grading_beside_the_reference_fix_leaves_its_verdict_unchanged(scratch, level):
    """The issue's case: at unshare, sleepers filling uid 65534's RLIMIT_NPROC failed a
    concurrent grading of the reference fix (0/9 probes). Each sandbox now has its own uid and
    cgroup: the reference fix stays resolved while the hostile run holds everything it can."""
    alone = patching.grade_patch("orders_batch", "memory_leak", _fix_diff())
    assert alone["resolved"] == "full"
    patching._MEMO.clear()
    hostile: dict = {}

    def attack():
        hostile["result"] = sandbox.run_isolated(
            [sandbox.python(), "-I", "-S", "-c", HOSTILE], scratch, timeout_s=30, level=level,
            stdin=json.dumps({"hold_s": 8, "hog_bytes": 256 << 20}).encode())

    attacker = threading.Thread(target=attack)
    attacker.start()
    time.sleep(2.0)  # the sleepers are in place
    beside = patching.grade_patch("orders_batch", "memory_leak", _fix_diff())
    attacker.join()
    children = json.loads(hostile["result"].stdout.decode().splitlines()[0])["children"]
    assert children >= sandbox_slots.GRADING_PIDS // 2  # it did fill its own limit
    assert beside["resolved"] == alone["resolved"] == "full"
    assert beside["FAIL_TO_PASS"] == alone["FAIL_TO_PASS"]


MEMORY = r"""
import json, os, struct, sys, time
p = json.loads(sys.stdin.read())
read_end, write_end = os.pipe()
children = []
for _ in range(p["children"]):
    pid = os.fork()
    if pid == 0:
        try:
            with open("/proc/self/oom_score_adj", "w") as adj:
                adj.write("1000")  # the out-of-memory killer takes a child, not this process
            hog = b"x" * p["each"]
            os.write(write_end, struct.pack("i", os.getpid()))
        finally:
            time.sleep(p["hold_s"])
            os._exit(0)
    children.append(pid)
os.close(write_end)
time.sleep(p["hold_s"] / 2)
os.set_blocking(read_end, False)
try:
    filled = os.read(read_end, 4 * p["children"])
except BlockingIOError:
    filled = b""
reported = {pid for (pid,) in struct.iter_unpack("i", filled)}
# a child that filled its memory and was then killed for a later one's held it, but not at
# the same time: count those that hold theirs now (still running, not yet reaped)
ended = {pid: status for pid, status in (os.waitpid(c, os.WNOHANG) for c in children) if pid}
held = len(reported - set(ended))
for pid in set(children) - set(ended):
    ended[pid] = os.waitpid(pid, 0)[1]
alive = sum(os.waitstatus_to_exitcode(status) == 0 for status in ended.values())
print(json.dumps({"held": held, "alive": alive, "reported": len(reported)}))
"""


@pytest.mark.skipif(not sandbox_slots._hierarchies(), reason="no writable cgroup here: memory "
                    "is bounded per process only (RLIMIT_AS), see docs/sandbox.md")
def test_one_gradings_total_memory_is_bounded(scratch, level):
    """The issue's case: 1,223 MB resident in 3 processes of one grading. Three children of
    one sandbox each try to hold 600 MB; the grading's cgroup holds at most GRADING_MEMORY,
    so at most one of them holds it at any moment, and at most one lives to the end."""
    each = 600 << 20
    assert 2 * each > sandbox_slots.GRADING_MEMORY
    seen = _run(level, MEMORY, scratch, {"children": 3, "each": each, "hold_s": 6}, timeout_s=40)
    assert seen["held"] * each <= sandbox_slots.GRADING_MEMORY and seen["alive"] <= 1, seen


NEIGHBOUR = r"""
import ctypes, json, os, socket, sys, time
p = json.loads(sys.stdin.read())
libc = ctypes.CDLL(None, use_errno=True)
if p["role"] == "hold":
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(b"\0" + p["name"].encode())
    server.listen()
    shm = libc.shmget(p["ipc_key"], 4096, 0o1666)  # IPC_CREAT, world-readable
    print(json.dumps({"pid": os.getpid(), "shm": shm}), flush=True)
    time.sleep(p["hold_s"])
    print(json.dumps({"pid": os.getpid(), "shm": shm}))
else:
    out = {}
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(b"\0" + p["name"].encode())
        out["abstract socket"] = "connected"
    except OSError as exc:
        out["abstract socket"] = exc.errno
    out["sysv shm"] = "found" if libc.shmget(p["ipc_key"], 0, 0) >= 0 else ctypes.get_errno()
    try:
        os.kill(p["pid"], 0)
        out["signal"] = "delivered"
    except OSError as exc:
        out["signal"] = exc.errno
    print(json.dumps(out))
"""


def test_two_sandboxes_share_no_socket_ipc_or_signals(scratch, level):
    """The fourth case: what else crosses between gradings running at once. An abstract unix
    socket (network namespace), a SysV shared-memory segment (IPC namespace) and a signal to the
    other's process (PID namespace) do not."""
    name, key = f"srelib-v4-{os.getpid()}", 0x5E11B0 + os.getpid() % 1000
    started = sandbox.prepare([sandbox.python(), "-I", "-S", "-c", NEIGHBOUR], timeout_s=20,
                              level=level)
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(run=started.finish(json.dumps(
        {"role": "hold", "name": name, "ipc_key": key, "hold_s": 4}).encode(), 20)))
    thread.start()
    time.sleep(2.0)  # bound, segment made
    seen = _run(level, NEIGHBOUR, scratch, {"role": "probe", "name": name, "ipc_key": key,
                                            "pid": started.proc.pid})  # the holder's launcher
    thread.join()
    held = json.loads(result["run"].stdout.decode().splitlines()[-1])
    assert result["run"].returncode == 0 and held["shm"] >= 0
    assert seen == {"abstract socket": errno.ECONNREFUSED, "sysv shm": errno.ENOENT,
                    "signal": errno.ESRCH}


# ----------------------------------------------------------------- 3. grader failures

@pytest.fixture
def tiny_apply_folder(monkeypatch):
    """A real tmpfs of 1 MiB, made here, as the folder patches are applied in."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder = tempfile.mkdtemp(prefix="srelib-test-enospc-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "none", folder], check=True)
    monkeypatch.setattr(patching, "apply_folder", lambda: folder)
    patching._MEMO.clear()
    try:
        yield Path(folder)
    finally:
        subprocess.run(["umount", "-l", folder], check=True)
        os.rmdir(folder)
        patching._MEMO.clear()


def _fill(folder: Path, leave: int) -> Path:
    """Fill ``folder``'s filesystem until ``leave`` bytes or fewer are free; the filler."""
    filler = folder / "filler"
    with filler.open("wb") as out:
        while True:
            stats = os.statvfs(folder)
            room = stats.f_bavail * stats.f_frsize - leave
            if room <= 0:
                break
            try:
                out.write(b"\0" * min(room, 1 << 16))
                out.flush()
            except OSError:
                break
    return filler


def _tree_bytes() -> int:
    """What the repository's tree takes on a tmpfs: a page per file at least."""
    return sum(-(-max(1, len(t.encode())) // 4096) * 4096 for t in load_repo("orders_batch").tree.values())


@pytest.mark.parametrize("room", ["full", "nearly full"])
def test_a_full_apply_folder_is_a_grading_error_never_memoised(tiny_apply_folder, room):
    """The issue's cases: a full /dev/shm made grade_patch raise ENOSPC, and a nearly full one
    graded a correct fix (with a long docstring) "no" and memoised it. Now both are grading
    errors, tried twice, never memoised; with room again the same diff is resolved."""
    diff = _fix_diff('\n\ndef documented():\n    """' + "x" * 300_000 + '"""\n')
    filler = _fill(tiny_apply_folder, 0 if room == "full" else _tree_bytes() + 8192)
    with pytest.raises(GradingError) as raised:
        patching.grade_patch("orders_batch", "memory_leak", diff)
    assert raised.value.kind == "no_space" and raised.value.attempts == patching.GRADING_ATTEMPTS
    assert not patching.grade_memoised("orders_batch", "memory_leak", diff)
    filler.unlink()
    assert patching.grade_patch("orders_batch", "memory_leak", diff)["resolved"] == "full"


def test_a_sandbox_killed_before_the_tests_start_is_a_grading_error(monkeypatch):
    """A stand-in runner (named: it replaces sandbox_runner.py) that SIGKILLs itself before it
    reads its input, in a real sandbox: no patched code ran, so no verdict."""
    monkeypatch.setenv(spare.SPARE_ENV, "0")
    monkeypatch.setattr(probe_run, "_runner_source", lambda: "import os; os.kill(os.getpid(), 9)")
    patching._MEMO.clear()
    with pytest.raises(GradingError) as raised:
        patching.grade_patch("orders_batch", "memory_leak", _fix_diff())
    assert raised.value.kind == "sandbox_killed"
    assert not patching.grade_memoised("orders_batch", "memory_leak", _fix_diff())
    monkeypatch.undo()
    assert patching.grade_patch("orders_batch", "memory_leak", _fix_diff())["resolved"] == "full"


def test_a_missing_tool_is_a_grading_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no git, no patch
    patching._MEMO.clear()
    with pytest.raises(GradingError) as raised:
        patching.grade_patch("orders_batch", "memory_leak", _fix_diff())
    assert raised.value.kind == "missing_tool" and "git" in raised.value.message
    assert not patching.grade_memoised("orders_batch", "memory_leak", _fix_diff())


def test_step_never_raises_and_a_resumed_run_grades_it_again(tiny_apply_folder, tmp_path):
    """With the apply folder full, the episode ends with no score and ``grading_error`` in
    ``info`` (step does not raise), its row in evaluate's frame says why and is counted apart;
    once there is room, running again with the same ``out`` grades it."""
    from srelib.env.core import IncidentEnv
    from srelib.env.tasks.lookup import get_scenario
    from srelib.policies.scripted.reference import ReferencePolicy
    from srelib.runners.rollout import GradingErrorWarning, evaluate

    filler = _fill(tiny_apply_folder, 0)
    env, policy = IncidentEnv(), ReferencePolicy()
    obs, info = env.reset(task="memory_leak", seed=0, mode="p2_only")
    policy.reset(seed=0, task_name="memory_leak")
    policy.receive_answer("memory_leak", get_scenario("memory_leak"))
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy(obs, obs["current_phase"], "memory_leak"))
        done = terminated or truncated
    assert info["score"] is None and info["grading_error"]["kind"] == "no_space"

    out = tmp_path / "run"
    with pytest.warns(GradingErrorWarning, match="1 of 1 episodes could not be graded"):
        frame = evaluate({"reference": ReferencePolicy}, tasks=["memory_leak"], pools=[None],
                         seeds=1, mode="p2_only", out=out, progress=False)
    assert frame.attrs["grading_errors"] == 1 and frame["final"].isna().all()
    assert frame["grading_error"].iloc[0].startswith("no_space: ")
    from srelib.runners.runs import verify_run
    unverified = verify_run(out)
    assert not unverified.ok and any("not graded (no_space)" in p for p in unverified.problems)
    filler.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error", GradingErrorWarning)
        again = evaluate({"reference": ReferencePolicy}, tasks=["memory_leak"], pools=[None],
                         seeds=1, mode="p2_only", out=out, progress=False)
    assert again.attrs["grading_errors"] == 0 and again["grading_error"].isna().all()
    assert again["resolved"].tolist() == ["full"] and again["final"].iloc[0] > 0.9
    assert verify_run(out).ok
