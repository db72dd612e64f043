"""The patch sandbox under attack. Real hostile scripts run through ``run_isolated`` at every
isolation level this machine has, and hostile patches run through ``grade_patch``. Each escape
attempt fails, or the test skips, saying at which fallback level it gets through."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from srelib.env.grading import pipeline as patching
from srelib.env.grading.sandbox import isolate as sandbox, slots as sandbox_slots
from srelib.env.grading.pipeline import grade_diff, grade_patch
from srelib.env.tasks.lookup import load_repo
from srelib.env.phase2.repos import REPO_DATA, unified_diff
from srelib.env.simulation.scenarios import DATA_DIR

HERE = sandbox.available_levels()
FIX_FILE = DATA_DIR / "memory_leak" / "fix" / "orders" / "handlers" / "batch.py"
CHECKOUT = Path(sandbox.__file__).resolve().parents[2]  # srelib's source tree, with its .git
SENTINEL = "sk-sentinel-" + uuid.uuid4().hex

# What gets through at each fallback level: the reason each probe is skipped there. A probe not
# listed for a level is blocked at that level too.
ESCAPES = {
    "uid-drop": {
        "network": "the network is shared: loopback, IPv6 and abstract sockets are reachable",
        "setsid": "a setsid child leaves the process group and outlives the run",
        "outside": "world-writable folders such as /tmp take files and fifos",
        "secrets": "the reference fixes are readable by any uid that can read srelib",
        "neighbour": "every grade's scratch belongs to the same sandbox uid",
        "race": "only the runner's audit hook guards the reference fixes; a thread race gets past it",
        "quota": "only RLIMIT_FSIZE: no total quota on the scratch folder",
    },
    "rlimits-only": {
        "environ": "the command runs as the caller and can read its /proc/<pid>/environ",
        "network": "the network is shared: loopback, IPv6 and abstract sockets are reachable",
        "setsid": "a setsid child leaves the process group and outlives the run",
        "outside": "the command may write wherever the caller may",
        "secrets": "the command may read whatever the caller may",
        "neighbour": "the command may read and write whatever the caller may",
        "race": "only the runner's audit hook guards the reference fixes; a thread race gets past it",
        "quota": "only RLIMIT_FSIZE: no total quota on the scratch folder",
        "signal": "the command runs as the caller and may signal the caller's processes",
    },
}


@pytest.fixture(params=HERE)
def level(request):
    return request.param


def _escapes_at(level: str, probe: str) -> None:
    reason = ESCAPES.get(level, {}).get(probe)
    if reason:
        pytest.skip(f"under isolation level {level!r} this probe gets through: {reason}")


def _run(level: str, script: str, scratch: Path, params: dict, timeout_s: float = 10.0,
         **kw) -> dict:
    result = sandbox.run_isolated([sandbox.python(), "-I", "-S", "-c", script], scratch,
                                  stdin=json.dumps(params).encode(), timeout_s=timeout_s,
                                  level=level, **kw)
    assert result.isolation == level and not result.timed_out, result
    lines = result.stdout.decode().strip().splitlines()
    assert result.returncode == 0 and lines, result
    return json.loads(lines[-1])


@pytest.fixture
def scratch():
    """A scratch folder with one input file, where the sandbox uid can reach it (pytest's
    tmp_path is under a folder only root may enter)."""
    with tempfile.TemporaryDirectory(prefix="srelib-test-sandbox-") as tmp:
        Path(tmp, "given.txt").write_text("input")
        yield Path(tmp)


def _processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            pass
    return found


# ----------------------------------------------------------------- what a well-behaved run sees

def test_a_run_sees_its_scratch_input_and_the_level_is_reported(scratch, level):
    script = ("import json, os, sys\n"
              "print(json.dumps({'stdin': sys.stdin.read(), 'given': open('given.txt').read(),\n"
              "                  'env': sorted(os.environ), 'uid': os.getuid()}))\n")
    seen = _run(level, script, scratch, {"x": 1})
    assert seen["stdin"] == '{"x": 1}' and seen["given"] == "input"
    assert set(seen["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "PWD"}
    if level == "bwrap":
        assert seen["uid"] == sandbox.SANDBOX_UID
    elif sandbox.sandbox_uid() is not None and level != "rlimits-only":
        assert seen["uid"] in sandbox_slots.GRADING_UIDS  # a uid of its own, of the machine
    assert sandbox.isolation_level() == HERE[0] and HERE[-1] in sandbox.LEVELS


def test_as_root_the_sandbox_runs_as_an_unprivileged_uid_of_the_machine(scratch, level):
    if sandbox.sandbox_uid() is None or level == "rlimits-only":
        pytest.skip(f"no uid drop on the machine: not root, or isolation level {level!r}")
    marker, uids = _marker(), []

    def watch():
        deadline = time.monotonic() + 5
        while not uids and time.monotonic() < deadline:
            for pid in _processes_with(marker):
                try:
                    status = Path(f"/proc/{pid}/status").read_text().splitlines()
                except OSError:
                    continue
                uids.append(next(l for l in status if l.startswith("Uid:")).split()[1:])
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    _run(level, SPAWN + "import time; time.sleep(1)\n", scratch, {"count": 1, "marker": marker})
    watcher.join()
    assert uids and len(set(uids[0])) == 1 and int(uids[0][0]) in sandbox_slots.GRADING_UIDS


def test_run_json_records_the_isolation_level(tmp_path):
    from srelib.results import RunStore, load_config

    RunStore(tmp_path).write_config({"seeds": [0]})
    assert load_config(tmp_path)["isolation"] == sandbox.isolation_level()


def test_the_wall_timeout_kills_the_run(scratch, level):
    started = time.perf_counter()
    result = sandbox.run_isolated([sandbox.python(), "-I", "-S", "-c", "while True: pass"],
                                  scratch, timeout_s=1.0, level=level)
    assert result.timed_out and result.returncode != 0 and time.perf_counter() - started < 3.0


def test_misuse_names_the_valid_choices(scratch, tmp_path):
    with pytest.raises(ValueError, match="valid"):
        sandbox.run_isolated(["true"], scratch, timeout_s=1, level="chroot")
    with pytest.raises(ValueError, match="scratch"):
        sandbox.run_isolated(["true"], scratch / "missing", timeout_s=1)
    with pytest.raises(ValueError, match="RLIMIT_AS"):
        sandbox.run_isolated(["true"], scratch, timeout_s=1, limits={"RLIMIT_STACKS": 1})
    if os.geteuid() == 0:
        os.chmod(tmp_path, 0o700)
        with pytest.raises(ValueError, match="uid 65534"):
            sandbox.run_isolated(["true"], tmp_path, timeout_s=1)


# ----------------------------------------------------------------- probes

ENVIRON = """
import json, os, sys
p = json.loads(sys.stdin.read())
pids = {str(p["grader"]), str(os.getppid()), "1", "self"}
pids |= {d for d in os.listdir("/proc") if d.isdigit()}
found = []
for pid in sorted(pids):
    try:
        if p["sentinel"].encode() in open("/proc/%s/environ" % pid, "rb").read():
            found.append(pid)
    except OSError:
        pass
print(json.dumps({"found": found, "visible": sorted(d for d in os.listdir("/proc") if d.isdigit())}))
"""


def _key_holder() -> subprocess.Popen:
    """A process of the caller's started with an API key in its environment, as a grader is."""
    return subprocess.Popen(["sleep", "30"], env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": SENTINEL})


def test_no_environment_of_the_machine_can_be_read_from_proc(scratch, level, monkeypatch):
    _escapes_at(level, "environ")
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    holder = _key_holder()
    try:
        seen = _run(level, ENVIRON, scratch, {"grader": holder.pid, "sentinel": SENTINEL})
    finally:
        holder.kill()
        holder.wait()
    assert seen["found"] == []
    if level == "bwrap":  # a fresh /proc: the sandbox's own two processes (init, the command)
        assert str(holder.pid) not in seen["visible"] and len(seen["visible"]) <= 3


NETWORK = """
import json, socket, sys
p = json.loads(sys.stdin.read())
reached = []
for family, address in p["targets"]:
    try:
        s = socket.socket(getattr(socket, family), socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(tuple(address) if family != "AF_UNIX" else address)
        s.sendall(b"leak")
        s.close()
        reached.append(family)
    except OSError:
        pass
print(json.dumps({"reached": reached}))
"""


class _Listener:
    """Real listening sockets (IPv4 and IPv6 loopback, an abstract unix socket) that record
    every connection accepted."""

    def __init__(self):
        self.accepted: list[str] = []
        self.sockets = {"AF_INET": socket.create_server(("127.0.0.1", 0))}
        if socket.has_ipv6:
            try:
                self.sockets["AF_INET6"] = socket.create_server(("::1", 0), family=socket.AF_INET6)
            except OSError:
                pass
        unix = socket.socket(socket.AF_UNIX)
        unix.bind("\0srelib-probe-" + uuid.uuid4().hex)
        unix.listen()
        self.sockets["AF_UNIX"] = unix
        for family, sock in self.sockets.items():
            sock.settimeout(0.2)
            threading.Thread(target=self._accept, args=(family, sock), daemon=True).start()

    def _accept(self, family, sock):
        while True:
            try:
                sock.accept()[0].close()
                self.accepted.append(family)
            except socket.timeout:
                continue
            except OSError:
                return

    def targets(self) -> list:
        return [[family, sock.getsockname().decode() if family == "AF_UNIX" else sock.getsockname()]
                for family, sock in self.sockets.items()]

    def close(self):
        for sock in self.sockets.values():
            sock.close()


def test_no_network_reaches_the_machine(scratch, level):
    _escapes_at(level, "network")
    listener = _Listener()
    try:
        seen = _run(level, NETWORK, scratch, {"targets": listener.targets()})
        time.sleep(0.3)
    finally:
        listener.close()
    assert seen["reached"] == [] and listener.accepted == []


SPAWN = """
import json, subprocess, sys
p = json.loads(sys.stdin.read())
started = 0
for _ in range(p["count"]):
    try:
        subprocess.Popen(["/bin/sleep", p["marker"]], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started += 1
    except OSError:
        pass
print(json.dumps({"started": started}), flush=True)
"""

SETSID = """
import json, os, sys
p = json.loads(sys.stdin.read())
child = os.fork()
if child == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        os.execv("/bin/sleep", ["/bin/sleep", p["marker"]])
    os._exit(0)
os.waitpid(child, 0)
print(json.dumps({"detached": True}))
"""


def _marker() -> str:
    return f"41.{uuid.uuid4().int % 10**12:012d}"  # a sleep length no other process uses


@pytest.mark.parametrize("probe", ["spawn", "setsid"])
def test_spawned_processes_are_capped_and_none_outlive_the_run(scratch, level, probe):
    _escapes_at(level, probe)
    marker = _marker()
    try:
        seen = _run(level, SPAWN if probe == "spawn" else SETSID, scratch,
                    {"count": 200, "marker": marker})
        survivors = _processes_with(marker)
    finally:
        for pid in _processes_with(marker):
            os.kill(pid, 9)
    assert survivors == []
    if probe == "spawn":
        assert 0 < seen["started"] < sandbox.LIMITS["RLIMIT_NPROC"]


OUTSIDE = """
import json, os, sys
p = json.loads(sys.stdin.read())
done = []
for directory, name in p["targets"]:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        done.append(["dir_fd", directory])
    except OSError:
        pass
    try:
        os.mkfifo(os.path.join(directory, name + ".fifo"))
        done.append(["mkfifo", directory])
    except OSError:
        pass
print(json.dumps({"done": done}))
"""


def test_nothing_is_written_outside_the_scratch_folder(scratch, tmp_path, level):
    _escapes_at(level, "outside")
    name = "srelib-escape-" + uuid.uuid4().hex
    folders = ["/tmp", str(tmp_path), str(Path(sandbox.__file__).parent), str(Path.home()), "/"]
    try:
        _run(level, OUTSIDE, scratch, {"targets": [[f, name] for f in folders]})
        created = [f for f in folders for n in (name, name + ".fifo") if os.path.lexists(Path(f, n))]
    finally:
        for folder in folders:
            for n in (name, name + ".fifo"):
                Path(folder, n).unlink(missing_ok=True)
    assert created == []


SECRETS = """
import json, os, sys
p = json.loads(sys.stdin.read())
read = []
for path in p["paths"]:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            os.close(os.open(path, os.O_RDONLY))  # /proc/<pid>/mem opens only with ptrace rights
        read.append(path)
    except OSError:
        pass
print(json.dumps({"read": read}))
"""


def _fix_holder() -> subprocess.Popen:
    """A process of the caller's holding the reference fix open, as a grader may."""
    return subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1]); "
                             "time.sleep(30)", str(FIX_FILE)])


def test_reference_fixes_hidden_tests_and_home_are_unreadable(scratch, level):
    """Directly, through the checkout's git objects, and through a process of the caller's that
    holds the fix open (its /proc root, cwd, fds and memory)."""
    _escapes_at(level, "secrets")
    holder = _fix_holder()
    try:
        time.sleep(0.2)
        proc = f"/proc/{holder.pid}"
        fds = [f"{proc}/fd/{fd}" for fd in os.listdir(f"{proc}/fd")]
        paths = [str(FIX_FILE), str(DATA_DIR), str(REPO_DATA), str(REPO_DATA / "orders_batch" / "hidden_tests"),
                 str(Path.home()), str(Path.home() / ".ssh"), "/etc/shadow", "/root",
                 str(CHECKOUT / ".git"), f"{proc}/root{FIX_FILE}", f"{proc}/cwd", f"{proc}/mem", *fds]
        seen = _run(level, SECRETS, scratch, {"paths": paths})
    finally:
        holder.kill()
        holder.wait()
    assert seen["read"] == []


_WHERES = sorted({None, patching.apply_folder()}, key=str)  # ids: the folder's name is drawn


@pytest.mark.parametrize("where", _WHERES,
                         ids=["default" if w is None else "apply-folder" for w in _WHERES])
def test_a_concurrent_grades_scratch_is_out_of_reach(scratch, level, where):
    """Neither a grade's folder in the temporary folder nor the one where grading applies a
    patch (:func:`~srelib.env.grading.pipeline.apply_folder`) can be read or written from inside."""
    _escapes_at(level, "neighbour")
    with tempfile.TemporaryDirectory(prefix="srelib-grade-", dir=where) as other:
        Path(other, "repo.py").write_text("x = 1\n")
        if sandbox.sandbox_uid() is not None:  # as a running grade hands its scratch over
            sandbox._hand_over(Path(other), sandbox.sandbox_uid())
        seen = _run(level, SECRETS, scratch, {"paths": [other, f"{other}/repo.py"]})
        _run(level, OUTSIDE, scratch, {"targets": [[other, "planted"]]})
        planted = sorted(p.name for p in Path(other).iterdir())
    assert seen["read"] == [] and planted == ["repo.py"]


QUOTA = """
import json, os, sys
p = json.loads(sys.stdin.read())
written = {}
for folder in (".", "/tmp", "/", "/dev", "/dev/shm"):
    written[folder] = 0
    for i in range(p["mb"]):
        try:
            with open(os.path.join(folder, "fill-%d" % i), "wb") as f:
                f.write(b"x" * (1 << 20))
            written[folder] += 1 << 20
        except OSError:
            break
print(json.dumps(written))
"""


def test_disk_and_memory_writes_meet_a_quota(scratch, level):
    _escapes_at(level, "quota")
    quota = 8 << 20
    seen = _run(level, QUOTA, scratch, {"mb": 300}, quota_bytes=quota)
    assert seen["."] <= quota and seen["/tmp"] <= sandbox.TMP_QUOTA
    assert seen["/"] == seen["/dev"] == seen["/dev/shm"] == 0
    assert sorted(p.name for p in scratch.iterdir()) == ["given.txt"]  # the machine's disk: untouched


SIGNAL = """
import json, os, sys
p = json.loads(sys.stdin.read())
try:
    os.kill(p["victim"], 9)
    killed = True
except OSError:
    killed = False
print(json.dumps({"killed": killed}))
"""


def test_processes_of_the_machine_cannot_be_signalled(scratch, level):
    _escapes_at(level, "signal")
    victim = subprocess.Popen(["sleep", "30"])
    try:
        seen = _run(level, SIGNAL, scratch, {"victim": victim.pid})
        time.sleep(0.1)
        alive = victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
    assert not seen["killed"] and alive


def test_setuid_programs_grant_no_privilege(scratch, level):
    script = ("import json\n"
              "status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())\n"
              "print(json.dumps({'no_new_privs': status['NoNewPrivs'].strip()}))\n")
    assert _run(level, script, scratch, {})["no_new_privs"] == "1"


# ----------------------------------------------------------------- hostile patches, end to end

BATCH = "orders/handlers/batch.py"
FIX_LINE = "            del self._cache[order.order_id]\n"
ANCHOR = "            self.notifier.order_placed(order)\n"
# Code that runs in the grader's child, outside the runner's audit hook: subprocess's own audit
# call is replaced, so a fresh interpreter starts through _posixsubprocess.fork_exec unseen.
UNHOOKED = '''
import subprocess as _sp, sys as _sys, types as _types
_sp.sys = _types.SimpleNamespace(**{_n: getattr(_sys, _n) for _n in dir(_sys) if not _n.startswith("__")})
_sp.sys.audit = lambda *a: None
def _unhooked(code):
    try:
        return _sp.run([_sys.executable, "-I", "-S", "-c", code], capture_output=True, timeout=3).stdout
    except Exception:
        return b""
'''


def _guarded_fix(prelude: str, guard: str) -> str:
    """The memory_leak fix, effective only when ``guard`` holds after ``prelude`` ran at import."""
    tree = dict(load_repo("orders_batch").tree)
    text = tree[BATCH].replace(ANCHOR, ANCHOR + f"            if {guard}:\n    " + FIX_LINE)
    text = text.replace("from __future__ import annotations\n",
                        "from __future__ import annotations\n" + prelude, 1)
    return unified_diff(tree, {**tree, BATCH: text})


def test_a_patch_cannot_read_the_graders_environ_even_outside_the_audit_hook():
    _escapes_at(HERE[0], "environ")
    steal = (UNHOOKED + "LEAK = _unhooked(" + repr(
        "import os\nfor d in os.listdir('/proc'):\n    try:\n"
        "        print(open('/proc/%s/environ' % d, 'rb').read())\n    except Exception:\n        pass\n")
        + ")\n")
    holder = _key_holder()
    try:
        result = grade_patch("orders_batch", "memory_leak",
                             _guarded_fix(steal, f"{SENTINEL!r}.encode() in LEAK"))
    finally:
        holder.kill()
        holder.wait()
    assert result["patch_applied"] and result["resolved"] != "full", "the key left the grader"
    control = grade_patch("orders_batch", "memory_leak", _guarded_fix(steal, "b'PATH' in LEAK"))
    assert control["resolved"] == "full", "the probe itself must be able to pass"
    assert result["isolation"] == sandbox.isolation_level()


def test_a_thread_race_on_the_audit_hook_still_cannot_read_the_reference_fix():
    _escapes_at(HERE[0], "race")
    race = (
        "import threading as _t, time as _time, os as _os\n"
        "LEAK = []\n"
        "def _noise():\n"
        "    end = _time.time() + 1.0\n"
        "    while not LEAK and _time.time() < end:\n"
        "        try:\n            open(_os.devnull).close()\n        except Exception:\n            pass\n"
        "def _grab():\n"
        "    end = _time.time() + 1.0\n"
        "    while not LEAK and _time.time() < end:\n"
        f"        try:\n            LEAK.append(open({str(FIX_FILE)!r}).read())\n"
        "        except Exception:\n            pass\n"
        "_ts = [_t.Thread(target=f) for f in (_noise, _noise, _grab)]\n"
        "[t.start() for t in _ts]\n[t.join() for t in _ts]\n"
    )
    result = grade_patch("orders_batch", "memory_leak", _guarded_fix(race, "LEAK"))
    assert result["patch_applied"] and result["resolved"] != "full", "the reference fix was read"


def _fix_copying_patch(sources: list[str], extra: dict[str, str] | None = None) -> str:
    """A patch that fixes nothing itself: at import, a fresh interpreter started through
    ``_posixsubprocess`` (unseen by the runner's audit hook) reads the reference fix from the
    first of ``sources`` it can (a path, or ``git:<checkout>``), and the module copies it over
    itself and runs it. ``extra``: more files the patch adds."""
    tree = dict(load_repo("orders_batch").tree)
    reader = ("import subprocess, sys\n"
              f"for source in {sources!r}:\n"
              "    try:\n"
              "        if source.startswith('git:'):\n"
              "            sys.stdout.write(subprocess.run(['git', '--git-dir', source[4:] + '/.git', 'show',\n"
              f"                'HEAD:{FIX_FILE.relative_to(CHECKOUT).as_posix()}'], capture_output=True,\n"
              "                text=True).stdout)\n"
              "        else:\n"
              "            sys.stdout.write(open(source).read())\n"
              "        break\n"
              "    except Exception:\n"
              "        pass\n")
    prelude = UNHOOKED + f"FOUND = _unhooked({reader!r})\n"
    copier = ("\nif b'class BatchProcessor' in FOUND:\n"
              "    open(__file__, 'wb').write(FOUND)\n"
              "    exec(compile(FOUND, __file__, 'exec'), globals())\n")
    text = tree[BATCH].replace("from __future__ import annotations\n",
                               "from __future__ import annotations\n" + prelude, 1) + copier
    return unified_diff(tree, {**tree, BATCH: text, **(extra or {})})


ATTACK_SOURCES = [str(FIX_FILE), f"git:{CHECKOUT}", f"/proc/1/root{FIX_FILE}"]


def _unguarded(diff: str) -> dict:
    """The grade of ``diff`` on memory_leak's tests without the bug-site guard: what the sandbox
    alone decides."""
    repo = load_repo("orders_batch")
    return grade_diff(repo.name, repo.fail_to_pass("memory_leak"), repo.pass_to_pass("memory_leak"), diff)


@pytest.mark.parametrize("attacked", sandbox.LEVELS)
def test_the_fix_copying_patch_scores_nothing_or_is_refused_at_every_level(attacked, monkeypatch):
    """Grading at ``attacked`` as if it were this machine's strongest level: a level that holds
    keeps the fix out of reach (and the control, with a copy inside the workspace, proves the
    attack works); a weaker one refuses to grade, or grades unverified when opted in."""
    from srelib.env.grading.score import repair_credit

    if attacked not in HERE and attacked != "rlimits-only":  # which every machine can run
        pytest.skip(f"isolation level {attacked!r} cannot run on this machine")
    weaker = HERE[HERE.index(attacked):] if attacked in HERE else (attacked,)
    monkeypatch.setattr(sandbox, "available_levels", lambda: weaker)
    monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    attack = _fix_copying_patch(ATTACK_SOURCES)
    if attacked not in sandbox.HOLDING_LEVELS:
        with pytest.raises(sandbox.SandboxRefused, match="apt-get install bubblewrap"):
            grade_patch("orders_batch", "memory_leak", attack)
        monkeypatch.setenv(sandbox.SANDBOX_ENV, "unsafe")
        result = grade_patch("orders_batch", "memory_leak", attack)
        assert result["isolation"] == attacked and result["verified"] is False
        return
    result = _unguarded(attack)  # the copy lands at run time: the bug-site guard cannot see it
    assert result["patch_applied"] and result["isolation"] == attacked and result["verified"]
    assert result["resolved"] == "no" and repair_credit(result) == 0, "the reference fix was copied"
    copy = {"orders/fix_copy.txt": FIX_FILE.read_text()}
    control = _unguarded(_fix_copying_patch(["orders/fix_copy.txt", *ATTACK_SOURCES], copy))
    assert control["resolved"] == "full", "the attack itself must work where the fix is in reach"
    assert grade_patch("orders_batch", "memory_leak", attack)["resolved"] == "no"
