# pyright: reportUndefinedVariable=false
"""The hidden-test probe runner that patching.py starts as ``python -I -S -B -c <source>``.

Its source is :mod:`srelib.env.grading.verdicts.observe`'s followed by this file's
(``probe_observe.program``), so it observes a probe as the generator's test derivation does.

Standard library only; it never imports srelib. It may be started before its grading is
known (srelib.env.grading.sandbox.spare), and waits for its input with its own imports done and the standard
modules named in its arguments imported (those the repository's own top-level modules share a
name with are dropped once it knows the repository). It reads two lines
from stdin: a nonce and a JSON config (``files``: {path: the patched repository's file, its
bytes as latin-1 text}; ``probes``: {file name: source}; ``expected``: {file name: [the test
ids its probes report]}; ``preload``: standard modules the repository imports; ``limits``,
``uid``, ``per_test_s``, ``seed``), so no hidden test lies on disk where the code under test
could find it. Then, before any probe or patched code runs, it keeps a private copy of stdout
as the result channel, reports ``{"received": true}`` on it (the grader's sign that it read
its input), points fd 1 and 2 at /dev/null, imports ``preload``, writes the repository under
its working folder, applies the resource limits and drops to ``uid`` unless it is null.

The patched code never runs in this process. Each probe file runs in a forked child that first
points the result channel's descriptor at /dev/null, then installs an audit hook that refuses
subprocesses, sockets, ctypes, process-wide introspection, writes outside the repository and
reads outside the repository and the standard library, and reports on a pipe of its own. This
process relays what the pipe carries: for each probe the file defines (``expected``, read from
its source by the grader, not from the child) the first well-formed record, rewritten field by
field under the nonce.
Code under test that takes its child over can report wrong observations for its own file's
probes, and nothing else: it cannot reach, replace or write to the channel.

It only observes (``probe_observe.observe_timed``): each ``probe_<name>`` function of each probe
file is called once (a probe that
takes one argument gets ``random.Random("<seed>:<test id>")``, so the inputs it draws are new at
every grading and the grader's check redraws them; see srelib.env.grading.verdicts.rules), and one
line ``<nonce> <json>`` reports ``{"id": "<file>::test_<name>", "value": <what it returned>,
"raised": null or {"type", "message"}, "printed": <its captured stdout and stderr>}``. Whether
an observation is right is decided by the grader, in its own process, against checks this
process never sees.
"""

import json
import os
import resource
import sys

# This source runs after srelib/env/grading/verdicts/observe.py's (probe_observe.program): alarm,
# install_alarm, load_probes, observe_timed, probe_rng, NOTE_CHARS and RECORD_CHARS are its.
# It imports nothing for them, not even typing.TYPE_CHECKING: a module the runner imports is
# one the repository under test can no longer name as its own (srelib.env.grading.sandbox.spare).

_BLOCKED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg", "signal.pthread_kill",
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdll.LoadLibrary", "ctypes.call_function",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames",
    "os.setuid", "os.setgid", "os.chroot", "os.putenv", "os.unsetenv",
})
_PATH_EVENTS = {  # event -> indexes of its path arguments; all are writes
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1),
    "os.chmod": (0,), "os.chown": (0,), "os.symlink": (0, 1), "os.link": (0, 1),
    "os.truncate": (0,), "os.utime": (0,), "shutil.rmtree": (0,), "shutil.copyfile": (1,),
    "shutil.copytree": (1,), "shutil.move": (0, 1),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_READ_EVENTS = {"os.listdir": 0, "os.scandir": 0, "glob.glob": 0}


def _under(path, roots):
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r + os.sep) for r in roots)


def _install_hook(repo, readable):
    writable = (repo,)
    busy = []

    def hook(event, args):
        if busy:
            return
        if event in _BLOCKED_EVENTS or event.startswith("ctypes."):
            raise PermissionError(f"sandbox: {event} is not allowed")
        busy.append(1)
        try:
            if event == "open":
                path, mode, flags = args
                if isinstance(path, int):
                    return
                write = any(c in (mode or "") for c in "wax+") or bool((flags or 0) & _WRITE_FLAGS)
                if not _under(path, writable if write else readable):
                    raise PermissionError(f"sandbox: may not {'write' if write else 'read'} {path}")
            elif event in _PATH_EVENTS:
                for i in _PATH_EVENTS[event]:
                    if i < len(args) and isinstance(args[i], (str, bytes, os.PathLike)) \
                            and not _under(args[i], writable):
                        raise PermissionError(f"sandbox: {event} outside the repository")
            elif event in _READ_EVENTS:
                target = args[_READ_EVENTS[event]]
                if isinstance(target, (str, bytes, os.PathLike)) and not _under(target, readable):
                    raise PermissionError(f"sandbox: may not list {target}")
        finally:
            busy.pop()

    sys.addaudithook(hook)


def _limit(limits, uid):
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def _run_file(name, source, per_test_s, seed, emit):
    try:
        with alarm(per_test_s):
            probes = load_probes(name, source, "probes_" + name[:-3])
    except BaseException as exc:
        emit({"file": name, "import_error": f"{type(exc).__name__}: {exc}"[:NOTE_CHARS]})
        return
    for test_id, probe in probes:
        emit({"id": test_id, **observe_timed(probe, probe_rng(seed, test_id), per_test_s)})


def _make_emitter(fd, nonce):
    def emit(record):
        os.write(fd, (nonce + " " + json.dumps(record) + "\n").encode())
    return emit


def _make_writer(fd):
    def write(record):
        os.write(fd, (json.dumps(record) + "\n").encode())
    return write


def _relay(fd, name, expected, emit):
    """Forward, under the nonce, the first well-formed record of each test id in ``expected``
    (or ``name``'s import error) that the child writes on ``fd``; drop the rest."""
    sent, buffer, skipping = set(), b"", False
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            if not skipping:
                _forward(line, name, expected, sent, emit)
            skipping = False
        if len(buffer) > RECORD_CHARS:
            buffer, skipping = b"", True


def _forward(line, name, expected, sent, emit):
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return
    if not isinstance(record, dict):
        return
    test_id = record.get("id")
    if test_id in expected and test_id not in sent:
        sent.add(test_id)
        emit({"id": test_id, "value": record.get("value"), "raised": record.get("raised"),
              "printed": record.get("printed", "")})
    elif record.get("file") == name and "import_error" in record and name not in sent:
        sent.add(name)
        emit({"file": name, "import_error": str(record["import_error"])[:NOTE_CHARS]})


def _run_in_child(name, source, config, seed, channel, devnull, emit):
    """Run one probe file in a forked child (see the module doc) and relay what it reports."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no way back to the channel, then the hook, then the patched code
        try:
            os.close(read_end)
            os.dup2(devnull, channel)
            repo = config["repo"]
            stdlib = os.path.realpath(os.path.dirname(os.__file__))
            _install_hook(repo, (repo, stdlib, os.devnull, "/dev/urandom", "/etc/localtime",
                                 "/usr/share/zoneinfo"))
            os.chdir(repo)
            sys.path.insert(0, repo)
            _run_file(name, source, config["per_test_s"], seed, _make_writer(write_end))
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        _relay(read_end, name, set(config["expected"].get(name, ())), emit)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)


def _write_repo(files):
    """Write the repository (``{path: latin-1 text}``) under ./repo; its real path."""
    for path, text in files.items():
        target = os.path.join("repo", path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(text.encode("latin-1"))
    return os.path.realpath("repo")


def _preload(names):
    for name in names:
        try:
            __import__(name)
        except ImportError:
            pass


def _forget_shadowed(ahead, files):
    """Drop the modules imported ahead (names in ``ahead``) whose top-level name the
    repository's own files take: it imports its own, as in a runner started for it."""
    own = {path.split("/", 1)[0].removesuffix(".py") for path in files}
    for name in [n for n in ahead if n.split(".", 1)[0] in own]:
        sys.modules.pop(name, None)


def main():
    before = set(sys.modules)
    _preload(sys.argv[1:])  # while waiting: the standard modules most repositories import
    ahead = set(sys.modules) - before
    nonce = sys.stdin.readline().strip()
    config = json.loads(sys.stdin.readline())
    channel = os.dup(1)
    emit = _make_emitter(channel, nonce)
    del nonce
    emit({"received": True})  # before any patched code runs: the grader's sign it got its input
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(0)
    os.makedirs("repo", exist_ok=True)
    _forget_shadowed(ahead, config["files"])
    _preload(config.pop("preload"))  # once here, not in each probe file's child
    config["repo"] = _write_repo(config.pop("files"))
    os.environ.update(HOME=config["repo"], TMPDIR=config["repo"])
    _limit(config["limits"], config["uid"])
    install_alarm()
    seed = config.pop("seed")
    for name, source in sorted(config.pop("probes").items()):
        _run_in_child(name, source, config, seed, channel, devnull, emit)
    emit({"done": True})
    os._exit(0)  # everything went out with os.write: skip the interpreter's teardown


main()
