"""The aimed repairer: its line-level edits, what a better handoff buys it, and what it reads."""

import ast
import functools
import inspect

import pytest

import srelib
from srelib.analysis.ceiling import ceiling_episodes, handoff_gain, ladder_episodes
from srelib.env.belief import BeliefState
from srelib.env.tasks.lookup import get_scenario
from srelib.policies import AimedLadderPhase2Policy, AimedRepairPhase2Policy
from srelib.policies import NullPhase1Policy
from srelib.policies.base import compose, handoff_action
from srelib.policies.scripted import aimed, aimed_edits
from srelib.policies.scripted.aimed_edits import (line_units, merge_line, names_bound, pair_lines,
                                                  release_on_error)
from srelib.policies.scripted.partial_revert import change_blocks, revert_blocks

#: A generated task whose bug is a missing hand-back on an error path (pool_exhaustion).
LEASE = "pool_exhaustion.api_gateway.route_lease"
#: A generated task whose bug is one edited line among a feature's (cache_thrash).
KEYING = "cache_thrash.api_gateway.route_keying"
KEYING_FILE, KEYING_FUNCTION = "gateway/route_lookup.py", "RouteLookup._key"

COMMIT = """diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,6 +1,7 @@
-PATTERN = "(ms|s)"
+_PART = "(s|ms)"
 
-def key(self, item):
-    return f"k:{item}"
+def key(self, item, trace=None):
+    \"\"\"The cache key.\"\"\"
+    return f"k:{item}:{trace}"
 
 LIMIT = 3
"""
NOW = ('_PART = "(s|ms)"\n\ndef key(self, item, trace=None):\n    """The cache key."""\n'
       '    return f"k:{item}:{trace}"\n\nLIMIT = 3\n')


def test_line_units_undo_lines_and_keep_signatures_docstrings_and_new_names():
    block = change_blocks(COMMIT)[0]
    assert pair_lines(block.removed[:1], block.added[:1]) == [(0, 0)]
    units = line_units(change_blocks(COMMIT))
    assert [(u.removed, u.added) for u in units] == [
        (('_PART = "(ms|s)"',), ('_PART = "(s|ms)"',)),
        (('    return f"k:{item}"',), ('    return f"k:{item}:{trace}"',))]
    diff, undone = revert_blocks({"pkg/mod.py": NOW}, units)
    assert undone == 2 and "+def key(self, item):" not in diff  # the new signature stays
    assert merge_line("A = 1", "A = 2") == "A = 1"


def test_a_restored_line_must_read_only_names_still_bound():
    text = "def f(x):\n    total = x\n    return total\n"
    assert names_bound(text, "    total += x")
    assert not names_bound(text, "    delay *= 2")


def test_the_error_path_hands_back_what_the_success_path_does():
    text = ("def run(self, fn):\n    conn = self.acquire()\n    try:\n        result = fn(conn)\n"
            "    except Exception:\n        raise\n    self.release(conn)\n    return result\n")
    fixed = release_on_error(text, 1, 8)
    assert "    except Exception:\n        self.release(conn)\n        raise\n" in fixed
    assert release_on_error(fixed, 1, 9) is None  # already handed back: nothing to add
    assert release_on_error("def f():\n    return 1\n", 1, 2) is None


class NamingPhase1:
    """A phase-1 stand-in (test scaffolding) that hands over a belief naming the culprit
    service, and, in its reasoning, a file and a function: what an agent's handoff can say."""

    def __init__(self, scenario, reasoning: str = ""):
        self.service, self.fault = scenario.root_cause_service, scenario.fault_class
        self.reasoning = reasoning

    def reset(self, seed=None, task_name=None):
        pass

    def __call__(self, observation, phase, task_name):
        return handoff_action(BeliefState(
            suspected_service=self.service, suspected_fault_class=self.fault,
            service_confidence=0.9, fault_confidence=0.9, decision="transition",
            reasoning=self.reasoning))


@pytest.fixture(scope="module")
def handoffs():
    scenario = get_scenario(KEYING)
    named = f"the fault is in {KEYING_FILE}: {KEYING_FUNCTION} splits the cache"
    policies = {
        "named": functools.partial(compose, functools.partial(NamingPhase1, scenario, named),
                                   AimedRepairPhase2Policy),
        "service only": functools.partial(compose, functools.partial(NamingPhase1, scenario),
                                          AimedRepairPhase2Policy),
        "null": functools.partial(compose, NullPhase1Policy, AimedRepairPhase2Policy),
    }
    return srelib.evaluate(policies, tasks=[KEYING], pools=["C"], seeds=1,
                           progress=False).set_index("policy")


def test_a_handoff_naming_file_and_function_resolves_and_a_null_one_does_worse(handoffs):
    assert handoffs.loc["named", "resolved"] == "full"
    assert handoffs.loc["named", "repair"] > handoffs.loc["service only", "repair"]
    assert handoffs.loc["named", "repair"] > handoffs.loc["null", "repair"]
    assert not handoffs["oracle"].any()  # none of them was handed the answer


def test_it_reads_only_observations():
    """It declares no need for the answer, and neither module reaches the task's facts: no
    import of the scenario, the bug site, the grader or the hidden tests."""
    assert not getattr(AimedRepairPhase2Policy(), "needs_answer", False)
    forbidden = ("lookup", "bug_site", "grading", "scenarios", "site_guard", "sandbox",
                 "oracle", "reference", "taskgen", "catalog")
    for module in (aimed, aimed_edits):
        tree = ast.parse(inspect.getsource(module))
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if any(part in m.split(".") for part in forbidden)]


def test_the_same_observations_give_the_same_actions_whatever_the_task_is_called():
    """Replaying an episode's observations under another task name gives the same actions:
    the task name (the only handle on hidden facts) is not used."""
    from srelib.env.core import IncidentEnv

    env = IncidentEnv()
    obs, _ = env.reset(task=LEASE, mode="p2_only", seed=0)
    policy, seen, actions = AimedRepairPhase2Policy(), [], []
    for _ in range(40):
        seen.append(obs)
        action = policy(obs, 2, srelib.task_id(LEASE))
        actions.append(action)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    replay = AimedRepairPhase2Policy()
    assert [replay(o, 2, "some-other-name") for o in seen] == actions
    assert actions[-1]["action_type"] == "propose_patch"


def test_the_ladder_climbs_at_the_file_and_the_function_rung():
    tasks = [LEASE, KEYING]
    frame = ladder_episodes(tasks, 1, repairer="aimed")
    repair = frame.pivot_table(index="task", columns="policy", values="repair")
    lease, keying = srelib.task_id(LEASE), srelib.task_id(KEYING)
    assert repair.loc[keying, "rung:belief"] < repair.loc[keying, "rung:file"]
    assert repair.loc[lease, "rung:file"] < repair.loc[lease, "rung:function"]
    assert frame[frame.policy != "rung:belief"]["oracle"].all()
    with pytest.raises(ValueError, match="valid"):
        ladder_episodes(tasks, 1, repairer="nonsense")
    with pytest.raises(ValueError, match="valid rungs"):
        AimedLadderPhase2Policy("everything")


def test_the_oracle_handoff_beats_the_null_one_with_a_ci_above_zero():
    """On every sixth train task (bench/bench_ceiling.py measures every task): the gain is a
    share of the tasks, so a handful of them would leave its CI at 0 by chance."""
    tasks = ["circuit_breaker_noop", "memory_leak", *srelib.list_tasks("generated", "train")[::6]]
    frame = ceiling_episodes(AimedRepairPhase2Policy, None, tasks=tasks, seeds=2)
    gain = handoff_gain(frame).set_index("suite").loc["all"]
    assert gain["gain_low"] > 0 and gain["n_pairs"] == 2 * len(tasks)


def test_a_ladder_without_rungs_plays_only_the_named_policies():
    frame = ladder_episodes([LEASE], 1, real={"aimed": AimedRepairPhase2Policy}, rungs=False)
    assert list(frame["policy"]) == ["aimed"]
    with pytest.raises(ValueError, match="nothing to play"):
        ladder_episodes([LEASE], 1, rungs=False)
