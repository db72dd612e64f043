"""Hidden-test verdicts the patched process cannot reach: runner hijacks, observation decoding,
SWE-bench resolution, and expected values that never enter the sandbox."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from srelib.env.grading import pipeline as patching
from srelib.env.grading.verdicts import rules as verdicts
from srelib.env.grading.score import repair_credit
from srelib.env.grading.pipeline import grade_patch, observe
from srelib.env.grading.probe_run import run_probes
from srelib.env.grading.sandbox.isolate import grading_level
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.phase2.repos import REPO_DATA, list_repos, unified_diff
from srelib.env.simulation.scenarios import TASKS
from srelib.env.grading.verdicts.rules import Observation, collect, decode_record, resolution
from srelib.adversarial.hijack import HIJACK_KINDS, HIJACK_POLICIES, runner_hijack_patch

FIX_TASKS = [t for t in TASKS if get_scenario(t).needs_fix]
FORGING = ("frame_walk", "encoder_override")  # they forge what their own child reports


def _patched_tree(repo_name: str, diff: str) -> dict[str, str]:
    """The repository's files after ``diff``, applied by the grader's own apply step."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        patching._write_tree(root, dict(load_repo(repo_name).tree))
        assert patching._apply(root, diff) is None
        return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("kind", HIJACK_KINDS)
def test_every_runner_hijack_is_graded_not_resolved(kind):
    for task in FIX_TASKS:
        repo = get_scenario(task).repo
        result = grade_patch(repo, task, runner_hijack_patch(kind, repo))
        assert result["patch_applied"], result["apply_error"]
        assert result["resolved"] == "no", (task, result)
        assert repair_credit(result) <= 0.15


@pytest.mark.parametrize("kind", FORGING)
def test_hijacks_do_take_the_child_over_and_forge_only_wrong_observations(kind):
    """The defence is not that the attack fails to run: the forged observations arrive, and the
    checks in the grader reject them."""
    repo, task = "orders_batch", "memory_leak"
    seen, timed_out = observe(repo, task, _patched_tree(repo, runner_hijack_patch(kind, repo)))
    wanted = load_repo(repo).fail_to_pass(task) + load_repo(repo).pass_to_pass(task)
    assert not timed_out and set(wanted) <= set(seen)
    assert all(seen[t].value is True and seen[t].raised is None for t in wanted), kind
    assert not any(verdicts.verdicts(load_repo(repo), wanted, seen).values())


def test_the_result_channel_is_out_of_the_patched_codes_reach():
    """forged_exit finds the channel's nonce and descriptor in the runner's memory and writes a
    forged stream of passing records to it: in the probes' child that descriptor leads to
    /dev/null, so nothing it forged arrives, and the probes it cut short are missing."""
    repo, task = "orders_batch", "memory_leak"
    seen, timed_out = observe(repo, task, _patched_tree(repo, runner_hijack_patch("forged_exit", repo)))
    wanted = load_repo(repo).fail_to_pass(task) + load_repo(repo).pass_to_pass(task)
    assert not timed_out and not set(wanted) & set(seen)
    truthful, _ = observe(repo, task, dict(load_repo(repo).tree))
    assert set(wanted) <= set(truthful)


def test_doctored_observations_arrive_doctored_and_fail():
    repo, task = "orders_batch", "memory_leak"
    ids = load_repo(repo).fail_to_pass(task) + load_repo(repo).pass_to_pass(task)
    truthful, _ = observe(repo, task, dict(load_repo(repo).tree))
    doctored, _ = observe(repo, task, _patched_tree(repo, runner_hijack_patch("doctored_observations", repo)))
    assert all(doctored[t].raised is None for t in ids)
    assert any(doctored[t].value != truthful[t].value for t in ids)
    assert not any(verdicts.verdicts(load_repo(repo), load_repo(repo).fail_to_pass(task), doctored).values())


def _leaves(change):
    def walk(value):
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return change(value)
    return walk


def _lists(change):
    def walk(value):
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return change([walk(v) for v in value])
        return value
    return walk


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


#: Generic rewrites a hijacked child could apply to truthful observations of unfixed code.
DOCTORING = {
    "numbers to 0": _leaves(lambda x: 0 if _number(x) else x),
    "numbers to 1": _leaves(lambda x: 1 if _number(x) else x),
    "numbers halved": _leaves(lambda x: x / 2 if _number(x) else x),
    "numbers minus 1": _leaves(lambda x: x - 1 if _number(x) else x),
    "booleans flipped": _leaves(lambda x: (not x) if isinstance(x, bool) else x),
    "booleans true": _leaves(lambda x: True if isinstance(x, bool) else x),
    "every leaf true": _leaves(lambda x: True),
    "every leaf null": _leaves(lambda x: None),
    "strings emptied": _leaves(lambda x: "" if isinstance(x, str) else x),
    "lists emptied": _lists(lambda items: []),
    "lists cut to one": _lists(lambda items: items[:1]),
    "lists deduplicated": _lists(lambda items: [x for i, x in enumerate(items) if x not in items[:i]]),
    "lists sorted": _lists(lambda items: sorted(items, key=repr)),
    "value null": lambda value: None,
    "value true": lambda value: True,
    "value 0": lambda value: 0,
}


def test_generic_doctoring_of_unfixed_observations_passes_no_fail_to_pass_check():
    """The checks pin behaviour tightly enough that no blind rewrite of what unfixed code really
    does, with or without a typical exception, turns a FAIL_TO_PASS test green."""
    passed = []
    for task in FIX_TASKS:
        repo_name = get_scenario(task).repo
        repo = load_repo(repo_name)
        truthful, _ = observe(repo_name, task, dict(repo.tree))
        for test_id in repo.fail_to_pass(task):
            seen = truthful[test_id]
            for name, doctor in DOCTORING.items():
                for raised in {seen.raised, None, "ValueError", "AssertionError"}:
                    forged = Observation(value=doctor(seen.value), raised=raised, printed=seen.printed)
                    if verdicts.check(repo, test_id, forged):
                        passed.append((test_id, name, raised))
    assert passed == []


def test_hijack_policy_proposes_the_patch_after_an_empty_handoff():
    policy = HIJACK_POLICIES["frame_walk"]()
    policy.receive_answer("memory_leak", get_scenario("memory_leak"))  # what runners hand it
    handoff = policy({"steps_taken": 0}, 1, "memory_leak")
    assert handoff["action_type"] == "transition_to_phase2"
    assert not any(handoff["parameters"]["belief"][k] for k in ("suspected_service", "suspected_fault_class"))
    proposal = policy({"steps_taken": 1}, 2, "memory_leak")
    assert proposal["parameters"]["diff"] == runner_hijack_patch("frame_walk", "orders_batch")
    with pytest.raises(ValueError, match="main_getattr"):
        runner_hijack_patch("nope", "orders_batch")


# ---------------------------------------------------------------- resolution semantics

@pytest.mark.parametrize("f2p,p2p,resolved", [
    ({"a": True, "b": True}, {"c": True}, "full"),
    ({"a": True, "b": False}, {"c": True}, "partial"),
    ({"a": False, "b": False}, {"c": True}, "no"),
    ({"a": True, "b": True}, {"c": False}, "no"),
    ({"a": True, "b": False}, {"c": True, "d": False}, "no"),
    ({}, {"c": True}, "full"),
    ({}, {"c": False}, "no"),
    ({"a": True}, {}, "full"),
])
def test_resolution_follows_swe_bench(f2p, p2p, resolved):
    assert resolution(f2p, p2p) == resolved


# ---------------------------------------------------------------- decoding observations

def _line(record) -> str:
    return json.dumps(record)


@pytest.mark.parametrize("payload", [
    "not json",
    _line(["a list"]),
    _line({"value": 1}),
    _line({"id": 7, "value": 1}),
    _line({"id": "f.py::test_x", "raised": "ValueError"}),
    _line({"id": "f.py::test_x", "raised": {"message": "no type"}}),
    _line({"id": "f.py::test_x", "printed": 3}),
    _line({"id": "f.py::test_x", "value": "x" * (verdicts.RECORD_CHARS + 1)}),
    '{"id": "f.py::test_x", "value": ' + "[" * 100_000 + "]" * 100_000 + "}",
    _line({"id": "f.py::test_x", "value": json.loads("[" * 40 + "]" * 40)}),
])
def test_malformed_or_oversized_records_are_not_observations(payload):
    assert decode_record(payload) is None


def test_records_decode_to_plain_observations_and_duplicates_are_dropped():
    good = _line({"id": "f.py::test_x", "value": {"n": [1, 2.5, None]}, "printed": "hi",
                  "raised": {"type": "KeyError", "message": "'sub'"}})
    test_id, seen = decode_record(good)
    assert test_id == "f.py::test_x"
    assert seen == Observation(value={"n": [1, 2.5, None]}, raised="KeyError", message="'sub'", printed="hi")
    twice = collect([good, _line({"id": "f.py::test_x", "value": True}), _line({"id": "f.py::test_y"})])
    assert set(twice) == {"f.py::test_y"}


def test_a_missing_observation_fails_and_an_unknown_check_is_a_clear_error():
    repo = load_repo("orders_batch")
    test_id = repo.fail_to_pass("memory_leak")[0]
    assert verdicts.check(repo, test_id, None) is False
    with pytest.raises(ValueError, match="test_batch_cache.py::test_"):
        verdicts.check(repo, "test_batch_cache.py::test_nope", Observation())


# ---------------------------------------------------------------- the two halves of a test

@pytest.mark.parametrize("name", list_repos())
def test_every_test_id_has_a_probe_and_a_check(name):
    repo = load_repo(name)
    assert set(repo.hidden_tests) == set(repo.checks)
    for task in repo.tasks:
        for test_id in repo.fail_to_pass(task) + repo.pass_to_pass(task):
            file, _, test = test_id.partition("::")
            probe = "probe_" + test[len("test_"):]
            assert re.search(rf"^def {probe}\((rng)?\):", repo.hidden_tests[file], re.M), (test_id, probe)
            assert test in verdicts._checks(repo, file), test_id


@pytest.mark.parametrize("name", list_repos())
def test_every_fail_to_pass_probe_draws_its_inputs(name):
    """Requirement: an observation replayed from another grading fails, so every FAIL_TO_PASS
    probe draws its inputs from the grading's seed and its check redraws them."""
    repo = load_repo(name)
    for task in repo.tasks:
        for test_id in repo.fail_to_pass(task):
            file, _, test = test_id.partition("::")
            assert re.search(rf"^def probe_{test[len('test_'):]}\(rng\):", repo.hidden_tests[file], re.M), test_id
            assert verdicts._checks(repo, file)[test].__code__.co_argcount == 2, test_id


LEAK = '''
import os as _leak_os
import sys as _leak_sys


def _leak_read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except Exception as exc:
        return "unreadable: " + type(exc).__name__


def _leak():
    seen, frame, emit = {}, _leak_sys._getframe(), None
    places = {_leak_os.getcwd(), _leak_os.path.dirname(_leak_os.getcwd())}
    while frame is not None:
        where = frame.f_globals.get("__file__") or ""
        if _leak_os.path.basename(where).startswith("test_"):
            places.add(_leak_os.path.dirname(where))
        emit = emit or frame.f_locals.get("emit") or frame.f_globals.get("emit")
        if isinstance(frame.f_locals.get("source"), str):  # the runner's copy, in memory
            seen["memory:" + str(frame.f_locals.get("name"))] = frame.f_locals["source"]
        frame = frame.f_back
    for place in places:
        try:
            for folder, _, files in _leak_os.walk(place):
                for name in files:
                    seen[_leak_os.path.join(folder, name)] = _leak_read(_leak_os.path.join(folder, name))
        except Exception:
            pass
    for path in EXTRA:
        seen[path] = _leak_read(path)
    emit({"id": "leak", "value": seen})


_leak()
'''


def test_expected_values_never_enter_the_sandbox():
    """Patched code that reads everything it can reach finds the probes, in the runner's memory
    and never on disk, and never the checks."""
    repo_name, task = "orders_batch", "memory_leak"
    repo = load_repo(repo_name)
    checks_dir = REPO_DATA / repo_name / "hidden_tests" / "checks"
    extra = [str(p) for p in checks_dir.glob("*.py")]
    tree = dict(repo.tree)
    reported = repo.fail_to_pass(task)[0]  # the leak reports under a probe's id: the relay's only way
    leak = LEAK.replace('"leak"', repr(reported))
    leaky = {**tree, "orders/__init__.py": tree["orders/__init__.py"] + f"\nEXTRA = {extra!r}\n" + leak}
    seen, _ = observe(repo_name, task, _patched_tree(repo_name, unified_diff(tree, leaky)))
    dump = seen[reported].value
    texts = "\n".join(dump.values())
    assert dump["memory:test_batch_cache.py"] == repo.hidden_tests["test_batch_cache.py"], \
        "the walk must reach the probes, or it proves nothing"
    on_disk = [text for path, text in dump.items() if not path.startswith("memory:")]
    assert on_disk and not set(on_disk) & set(repo.hidden_tests.values()), "a probe lies on disk"
    for check_text in repo.checks.values():
        assert check_text not in texts
    for path in extra:
        assert dump[path].startswith("unreadable")
    expectations = [line.strip() for text in repo.checks.values() for line in text.splitlines()
                    if line.strip().startswith("assert")]
    assert expectations and not [line for line in expectations if line in texts]


def test_drawn_inputs_are_new_at_every_grading_and_the_check_redraws_them(monkeypatch):
    probe = "def probe_draw(rng):\n    return [rng.randrange(10**9) for _ in range(3)]\n"
    seeds = (verdicts.draw_seed(), verdicts.draw_seed())
    seen = []
    for seed in seeds:
        observed, timed_out = run_probes({}, {"test_d.py": probe}, 30, grading_level()[0], seed)
        assert not timed_out
        seen.append(observed["test_d.py::test_draw"])
    assert seen[0].value != seen[1].value  # a replay of one grading's observations fails the next

    def test_draw(observation, rng):
        assert observation.value == [rng.randrange(10**9) for _ in range(3)]

    monkeypatch.setattr(verdicts, "_checks", lambda repo, file: {"test_draw": test_draw})
    repo = load_repo("orders_batch")  # any repository: its checks are the stand-in above
    assert verdicts.check(repo, "test_d.py::test_draw", seen[1], seeds[1])
    assert not verdicts.check(repo, "test_d.py::test_draw", seen[0], seeds[1])
