"""Fuzz: thousands of random and malformed actions never raise and always serialise."""

import json
import math

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
@given(task=st.sampled_from(srelib.TASKS), pool=st.sampled_from(["A", "B", "C", "D"]),
       seed=st.integers(0, 2**32), batch=st.lists(actions, min_size=20, max_size=40))
def test_random_actions_never_raise(task, pool, seed, batch):
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
