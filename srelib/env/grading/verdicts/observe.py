"""Observing a probe: the one implementation that grading and the generator's test derivation run.

Both run it in a child of their own, started as ``python -I -S -B -c <source>``: the sandbox
runner (``sandbox_runner.py``, patch grading) and the generator's batch runner
(:mod:`srelib.env.tasks.taskgen.runner`, FAIL_TO_PASS / PASS_TO_PASS). Each child's source is this
module's source followed by the runner's own (:func:`program`), so the two observe a probe with the
same code under the same bounds by construction. Standard library only; it imports nothing of
srelib, since the children cannot. Whether an observation passes is decided by
:func:`srelib.env.grading.verdicts.rules.passes`, for both, in the parent.

A probe file's ``probe_<name>`` functions run as ``<file>::test_<name>`` (:func:`load_probes`),
each once, under a per-test alarm (:func:`observe_timed`); one that takes an argument gets
:func:`probe_rng`. An observation is ``{"value", "raised": None or {"type", "message"},
"printed"}``, cut to the bounds below.
"""

import contextlib
import io
import json
import random
import signal
import sys
import types

#: Characters kept of a probe's printed text and of its exception's message.
PRINTED_CHARS = 4000
#: Characters of a returned value's JSON past which the value is unobservable.
VALUE_CHARS = 1 << 16
#: Characters kept of a note the runner writes itself (an unobservable value, an import error).
NOTE_CHARS = 300
#: Characters of one record line past which it is dropped (the runner's relay, the grader's decoder).
RECORD_CHARS = 1 << 17
#: Seconds a probe file's import, and each probe, may take.
PER_TEST_S = 5.0


def probe_rng(seed, test_id):
    """The generator a drawing probe gets, and its check gets again in the grader.

    Args:
        seed: The grading's (or derivation's) seed.
        test_id: The test id, ``<file>::test_<name>``.

    Returns:
        ``random.Random("<seed>:<test id>")``.
    """
    return random.Random(f"{seed}:{test_id}")


def load_probes(file, source, module_name):
    """Run a probe file's source as the module ``module_name`` and list its probes.

    Args:
        file: The probe file's name (``test_x.py``).
        source: Its source.
        module_name: The name it is imported under (registered in ``sys.modules``).

    Returns:
        ``[(test id, probe)]`` for the ``probe_*`` callables the file itself defines, by name.

    Raises:
        BaseException: Whatever running the file raises.
    """
    module = types.ModuleType(module_name)
    sys.modules[module_name] = module
    exec(compile(source, file, "exec"), vars(module))
    return [(f"{file}::test_{name[len('probe_'):]}", probe)
            for name, probe in sorted(vars(module).items())
            if name.startswith("probe_") and callable(probe)
            and getattr(probe, "__module__", "") == module_name]


def observe(probe, rng):
    """Call ``probe`` and describe what happened.

    Args:
        probe: A probe; called with ``rng`` when it takes an argument, else with none.
        rng: The generator from :func:`probe_rng`.

    Returns:
        ``{"value", "raised", "printed"}``, JSON-ready and within the module's bounds.
    """
    printed = io.StringIO()
    value, raised = None, None
    args = (rng,) if getattr(getattr(probe, "__code__", None), "co_argcount", 0) else ()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            value = probe(*args)
    except BaseException as exc:
        raised = {"type": type(exc).__name__, "message": str(exc)[:PRINTED_CHARS]}
    try:
        if len(json.dumps(value)) > VALUE_CHARS:
            raise ValueError(f"the value's JSON is over {VALUE_CHARS} characters")
    except (TypeError, ValueError, RecursionError) as exc:
        value, raised = None, {"type": "UnobservableValue", "message": str(exc)[:NOTE_CHARS]}
    return {"value": value, "raised": raised, "printed": printed.getvalue()[:PRINTED_CHARS]}


class _TestTimeout(BaseException):  # its name is what a timed-out observation reports
    """Raised by the per-test alarm; a BaseException so ``except Exception`` cannot swallow it."""


def _on_alarm(signum, frame):
    raise _TestTimeout("test exceeded its time limit")


def install_alarm():
    """Make SIGALRM raise ``_TestTimeout`` (the runner calls it once, before any probe)."""
    signal.signal(signal.SIGALRM, _on_alarm)


@contextlib.contextmanager
def alarm(seconds):
    """Arm the per-test alarm for the ``with`` block, and disarm it however the block ends.

    Args:
        seconds: How long the block may take.

    Yields:
        None.
    """
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def observe_timed(probe, rng, seconds):
    """:func:`observe` under the alarm.

    Args:
        probe: The probe.
        rng: The generator from :func:`probe_rng`.
        seconds: How long it may take.

    Returns:
        The observation; one that raised ``_TestTimeout`` if the alarm fired.
    """
    try:
        with alarm(seconds):
            return observe(probe, rng)
    except BaseException as exc:  # the alarm fired between the probe and the record
        return {"value": None, "printed": "",
                "raised": {"type": type(exc).__name__, "message": str(exc)[:NOTE_CHARS]}}


def program(runner):
    """A child's ``-c`` source: this module's source, then ``runner``'s.

    Args:
        runner: The runner's own source, which uses this module's names as globals.

    Returns:
        The source to run.
    """
    with open(__file__, encoding="utf-8") as own:
        return own.read() + "\n\n" + runner
