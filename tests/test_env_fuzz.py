"""Fuzz: random, malformed and hostile Python objects as actions never raise, and every\ntrajectory stays JSON-serialisable."""

import json
import math
import time

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import srelib
from srelib.env import actions as A

NAMES = list(A.ACTION_NAMES) + [A.PARSE_ERROR, A.GIVE_UP]
PARAM_NAMES = sorted({p for spec in A.ACTION_SPECS.values() for p in spec.params}) + ["raw"]

junk = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30)
    | st.sampled_from(["", ".", "../..", "/etc/passwd", "x" * 20000, "orders", "ERROR", "*"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6)
belief = st.fixed_dictionaries({}, optional={
    "suspected_service": st.sampled_from(list(A.SERVICES)) | junk,
    "service_confidence": st.floats(allow_nan=True) | junk,
    "evidence_gaps": junk, "decision": junk})
params = st.dictionaries(st.sampled_from(PARAM_NAMES), junk | st.integers(-3, 60), max_size=4) | junk
actions = st.one_of(
    junk,
    st.fixed_dictionaries(
        {"action_type": st.sampled_from(NAMES) | junk},
        optional={"target_service": st.sampled_from(list(A.SERVICES)) | junk,
                  "parameters": params | st.fixed_dictionaries({"belief": belief | junk})}),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cell=st.sampled_from([(t, p) for p in srelib.POOLS for t in srelib.POOLS[p].tasks]),
       seed=st.integers(0, 2**32), batch=st.lists(actions, min_size=20, max_size=40))
def test_random_actions_never_raise(cell, seed, batch):
    task, pool = cell
    env = srelib.IncidentEnv()
    obs, info = env.reset(task=task, pool=pool, seed=seed)
    done = False
    for action in batch:
        obs, reward, terminated, truncated, info = env.step(action)
        json.dumps(obs, allow_nan=False)
        json.dumps(info, allow_nan=False)
        assert math.isfinite(reward)
        assert obs["steps_taken"] <= obs["max_steps"]
        if done:
            assert reward == 0.0 and not info["valid"]
        done = done or terminated or truncated
        assert obs["done"] is done
    json.dumps(env.trajectory, allow_nan=False)


# ── hostile Python objects (issue 12): whatever a buggy or hostile policy hands over ─────────


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


class BadEq(str):
    def __eq__(self, other):
        raise RuntimeError("no eq")

    def __hash__(self):
        raise RuntimeError("no hash")

    def strip(self, *args):
        raise RuntimeError("no strip")


class BadInt(int):
    def __index__(self):
        raise RuntimeError("no index")

    __int__ = __repr__ = __index__


class BadFloat(float):
    def __float__(self):
        raise RuntimeError("no float")


class BadDict(dict):
    def get(self, *args):
        raise RuntimeError("no get")

    def items(self):
        raise RuntimeError("no items")

    def __getitem__(self, key):
        raise RuntimeError("no getitem")

    def __iter__(self):
        raise RuntimeError("no iter")


class BadList(list):
    def __iter__(self):
        raise RuntimeError("no iter")

    def __len__(self):
        raise RuntimeError("no len")


class Meta(type):
    def __getattribute__(cls, name):
        raise RuntimeError("no attributes")


class Nameless(metaclass=Meta):
    pass


def nested(depth, leaf, wrap=list):
    for _ in range(depth):
        leaf = wrap([leaf]) if wrap is list else {"k": leaf}
    return leaf


def cyclic_list():
    x = ["orders"]
    x.append(x)
    return x


def cyclic_dict():
    x = {"action_type": "view_alerts"}
    x["parameters"] = x
    return x


HOSTILE_LEAVES = [
    BadRepr(), BadEq("orders"), BadEq("view_alerts"), BadInt(5), BadFloat(0.5), Nameless(),
    10**5000, -(10**5000), float("nan"), float("inf"), b"\\x00bytes", bytearray(b"ab"), 3 + 4j,
    {1, 2}, frozenset(), range(10**12), (x for x in ()), object(), type, print,
    "x" * 2_000_000, "\\ud800 lone surrogate", "orders\\x00", A.ActionType.VIEW_ALERTS,
]


def leaf(index):
    return HOSTILE_LEAVES[index]


hostile_leaf = st.sampled_from(range(len(HOSTILE_LEAVES))).map(leaf)


def hostile_values():
    leaves = hostile_leaf | junk | st.sampled_from(list(A.SERVICES))
    return st.recursive(
        leaves,
        lambda inner: (st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
                       | st.lists(inner, max_size=3).map(BadList)
                       | st.dictionaries(st.text(max_size=8) | st.integers() | st.builds(BadRepr), inner,
                                         max_size=3)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=3).map(BadDict)
                       | st.builds(nested, st.integers(0, 1200), inner,
                                   st.sampled_from([list, dict]))),
        max_leaves=5)


hostile_actions = st.one_of(
    hostile_values(),
    st.fixed_dictionaries(
        {"action_type": st.sampled_from(NAMES) | hostile_values()},
        optional={"target_service": st.sampled_from(list(A.SERVICES)) | hostile_values(),
                  "parameters": st.dictionaries(st.sampled_from(PARAM_NAMES), hostile_values(),
                                                max_size=3) | hostile_values()}),
    st.fixed_dictionaries({"action_type": st.sampled_from(NAMES)},
                          optional={"parameters": st.dictionaries(
                              st.sampled_from(PARAM_NAMES), hostile_values(), max_size=3)}).map(BadDict),
)


def run_actions(env, batch):
    for action in batch:
        obs, reward, terminated, truncated, info = env.step(action)
        json.dumps(obs, allow_nan=False)
        json.dumps(info, allow_nan=False)
        assert math.isfinite(reward)
    json.dumps(env.trajectory, allow_nan=False)
    return obs, info


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(pool=st.sampled_from(["A", "B", "C"]), seed=st.integers(0, 2**32),
       batch=st.lists(hostile_actions, min_size=1, max_size=8))
def test_arbitrary_python_objects_never_raise(pool, seed, batch):
    env = srelib.IncidentEnv()
    env.reset(pool=pool, seed=seed)
    run_actions(env, batch)
    replay = srelib.IncidentEnv()  # and the saved records replay exactly as they ran
    replay.reset(pool=pool, seed=seed)
    for record in json.loads(json.dumps(env.trajectory)):
        if record["step"] > 0:  # not pool B's automatic handoff
            replay.step(record["action"])
    assert [(r["valid"], r["reward"], r["statuses"]) for r in replay.trajectory] == \
        [(r["valid"], r["reward"], r["statuses"]) for r in env.trajectory]


PROBES = {  # the probes of issue 12; each raised or broke the trajectory before
    "target nested 1000 deep": {"action_type": "check_metrics", "target_service": nested(1000, "orders")},
    "action_type nested 1000 deep": {"action_type": nested(1000, "view_alerts")},
    "parameters nested 1000 deep": {"action_type": "list_dir", "parameters": nested(1000, 1, dict)},
    "int of 5000 digits as target": {"action_type": "check_metrics", "target_service": 10**5000},
    "int of 5000 digits as parameter": {"action_type": "query_logs", "target_service": "orders",
                                        "parameters": {"limit": 10**5000}},
    "huge int in the belief": {"action_type": "transition_to_phase2", "parameters": {
        "belief": {"suspected_service": "orders", "service_confidence": 10**5000}}},
    "__repr__ raises": {"action_type": "check_metrics", "target_service": BadRepr()},
    "dict whose get raises": BadDict(action_type="view_alerts"),
    "str with raising __eq__/__hash__": {"action_type": BadEq("check_metrics"), "target_service": BadEq("orders")},
    "cyclic dict": cyclic_dict(),
    "cyclic list": {"action_type": "view_alerts", "parameters": {"x": cyclic_list()}},
    "10 MB string": {"action_type": "declare_root_cause", "parameters": {"root_cause": "x" * 10**7}},
    "a million list items": {"action_type": "view_alerts", "parameters": {"x": [0] * 10**6}},
    "bytes": {"action_type": b"view_alerts"},
    "nan and inf": {"action_type": "transition_to_phase2", "parameters": {"belief": {
        "suspected_service": "orders", "service_confidence": float("nan"), "fault_confidence": float("inf")}}},
    "a class with a hostile metaclass": Nameless(),
    "wide and deep": nested(7, [list(range(1000))] * 1000),
    "str subclass as a whole action": BadEq('{"action_type": "view_alerts"}'),
}


@pytest.mark.parametrize("name", list(PROBES))
def test_issue_probes_are_invalid_actions_not_exceptions(name):
    env = srelib.IncidentEnv()
    env.reset(task="memory_leak", pool="C", seed=1)
    started = time.perf_counter()
    obs, info = run_actions(env, [PROBES[name]])
    assert time.perf_counter() - started < 2.0
    assert obs["steps_taken"] == 1 and len(env.trajectory) == 1
    record = env.trajectory[0]
    assert len(json.dumps(record)) < 2_000_000
    if not info["valid"]:
        assert info["error"] and obs["action_result"]["valid_actions_hint"]
    replay = srelib.IncidentEnv()  # the record replays as it ran (srelib.results.verify relies on it)
    replay.reset(task="memory_leak", pool="C", seed=1)
    replay.step(json.loads(json.dumps(record["action"])))
    assert {k: replay.trajectory[0][k] for k in ("valid", "reward", "statuses")} == \
        {k: record[k] for k in ("valid", "reward", "statuses")}


def test_a_bounded_copy_is_what_the_environment_acts_on_and_records():
    env = srelib.IncidentEnv()
    env.reset(task="memory_leak", pool="C", seed=1)
    _, _, _, _, info = env.step(BadDict(action_type=A.ActionType.VIEW_ALERTS))
    assert info["valid"] and env.trajectory[0]["action"]["action_type"] == "view_alerts"
    _, _, _, _, info = env.step({"action_type": "query_logs", "target_service": "orders",
                                 "parameters": {"limit": 10**5000}})
    assert not info["valid"] and "parameters.limit is an integer larger than" in info["error"]
    _, _, _, _, info = env.step({"action_type": "check_metrics", "target_service": BadRepr()})
    assert not info["valid"] and "target_service is not JSON data (got BadRepr)" in info["error"]
    assert env.trajectory[2]["action"]["parameters"]["raw"] == {
        "action_type": "check_metrics", "target_service": "<BadRepr object>"}
    _, _, _, _, info = env.step({"action_type": "declare_root_cause",
                                 "parameters": {"root_cause": "x" * 200_000}})
    assert not info["valid"] and "parameters.root_cause is longer than 100000" in info["error"]
