"""Grading and the generator's FAIL_TO_PASS derivation observe and judge a probe alike: the same
probe files on the same tree, run through the sandboxed grader (:func:`run_probes`,
:func:`verdicts.verdicts`) and through the generator's batch runner (:func:`observe_many`,
:func:`judge`), give the same observations and the same verdicts, at and past every bound."""

from __future__ import annotations

import pytest

from srelib.env.grading.verdicts import rules as verdicts
from srelib.env.grading.verdicts.observe import NOTE_CHARS, PRINTED_CHARS, VALUE_CHARS
from srelib.env.grading.probe_run import run_probes
from srelib.env.phase2.repos import Repo
from srelib.env.grading.sandbox.isolate import grading_level
from srelib.env.tasks.taskgen.runner import judge, observe_many

SEED = 11
TREE = {"calc/__init__.py": "", "calc/ops.py": "STATE = []\n\ndef add(a, b):\n    return a + b\n"}
PROBES = {
    "test_a.py": f'''
from calc import ops


class Local:
    pass


def probe_sum(rng):
    a, b = rng.randrange(100), rng.randrange(100)
    return [a, b, ops.add(a, b)]


def probe_at_bound():
    return "x" * ({VALUE_CHARS} - 2)  # its JSON, quotes included, is exactly the bound


def probe_over_bound():
    return "x" * ({VALUE_CHARS} - 1)


def probe_unserialisable():
    return {{1, 2}}


def probe_loud():
    print("y" * ({PRINTED_CHARS} + 50))
    raise ValueError("z" * ({PRINTED_CHARS} + 50))


def probe_names():
    return repr(Local)


def probe_mutates():
    ops.STATE.append(1)
    return len(ops.STATE)


def probe_returns():
    return 1
''',
    "test_b.py": "from calc import ops\n\n\ndef probe_fresh():\n    return len(ops.STATE)\n",
    "test_c.py": "raise ImportError('no probes here')\n\n\ndef probe_gone():\n    return 1\n",
}
CHECKS = {
    "test_a.py": f'''
def test_sum(seen, rng):
    a, b = rng.randrange(100), rng.randrange(100)
    assert seen.value == [a, b, a + b]


def test_at_bound(seen):
    assert seen.raised is None and len(seen.value) == {VALUE_CHARS} - 2


def test_over_bound(seen):
    assert seen.raised is None, seen.message


def test_unserialisable(seen):
    assert seen.raised == "UnobservableValue"


def test_loud(seen):
    assert seen.raised == "ValueError" and len(seen.message) == len(seen.printed) == {PRINTED_CHARS}


def test_names(seen):
    assert seen.value == "<class 'probes_test_a.Local'>"


def test_mutates(seen):
    assert seen.value == 1


def test_returns(seen):
    return False  # a check passes unless it raises, whatever it returns
''',
    "test_b.py": "def test_fresh(seen):\n    assert seen.value == 0\n",
    "test_c.py": "def test_gone(seen):\n    pass\n",
}
EXPECTED = {"test_a.py::test_sum": True, "test_a.py::test_at_bound": True,
            "test_a.py::test_over_bound": False, "test_a.py::test_unserialisable": True,
            "test_a.py::test_loud": True, "test_a.py::test_names": True,
            "test_a.py::test_mutates": True, "test_a.py::test_returns": True,
            "test_b.py::test_fresh": True, "test_c.py::test_gone": False}


@pytest.fixture(scope="module")
def both():
    """``(grading's observations, the generator's)`` of :data:`PROBES` on :data:`TREE`."""
    graded, timed_out = run_probes(TREE, PROBES, 30, grading_level()[0], SEED)
    assert not timed_out
    return graded, observe_many([(TREE, PROBES)], seed=SEED)[0]


def test_grading_and_derivation_observe_alike_at_and_past_the_bounds(both):
    graded, derived = both
    assert graded == derived
    over = graded["test_a.py::test_over_bound"]
    assert (over.value, over.raised) == (None, "UnobservableValue")
    assert len(over.message) <= NOTE_CHARS and str(VALUE_CHARS) in over.message
    assert "test_c.py::test_gone" not in graded  # a file that does not import reports nothing


def test_grading_and_derivation_judge_alike(both):
    graded, derived = both
    repo = Repo(name="agree", service="none", description="", tree=TREE, commits=(),
                hidden_tests=PROBES, checks=CHECKS, fixes={}, tests_by_task={})
    by_grader = verdicts.verdicts(repo, sorted(EXPECTED), graded, SEED)
    by_generator = judge(CHECKS, derived, SEED)
    assert by_grader == by_generator == EXPECTED
    assert judge(CHECKS, derived, SEED + 1)["test_a.py::test_sum"] is False  # redrawn inputs differ
