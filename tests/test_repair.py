"""The partial revert (change blocks, undoing edits only) and the repair ladder's rungs."""

import functools

import pytest

import srelib
from srelib.policies import LadderPhase2Policy, PartialRevertPhase2Policy
from srelib.policies.scripted.partial_revert import change_blocks, edit_blocks, is_edit, revert_blocks

COMMIT = """diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,4 +1,9 @@
 def f(x):
-    return x + 1
+    return x + 2
+
+
+def g(x):
+    return f(x) * 2
 
 LIMIT = 3
diff --git a/tests/test_mod.py b/tests/test_mod.py
--- a/tests/test_mod.py
+++ b/tests/test_mod.py
@@ -1,1 +1,2 @@
-old = 1
+new = 1
+more = 2
"""
NOW = "def f(x):\n    return x + 2\n\n\ndef g(x):\n    return f(x) * 2\n\nLIMIT = 4\n"


def test_an_edit_followed_by_new_definitions_is_cut_in_two():
    blocks = change_blocks(COMMIT)
    assert [(b.path, b.removed, b.added) for b in blocks] == [
        ("pkg/mod.py", ("    return x + 1",), ("    return x + 2",)),
        ("pkg/mod.py", (), ("", "", "def g(x):", "    return f(x) * 2")),
        ("tests/test_mod.py", ("old = 1",), ("new = 1", "more = 2"))]
    assert [is_edit(b) for b in blocks] == [True, False, True]
    assert [b.path for b in edit_blocks(COMMIT)] == ["pkg/mod.py"]  # test files are never touched


def test_hunks_are_read_by_their_counts():
    diff = ("--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n select 1;\n--- old comment\n"
            "+-- new comment\n\\ No newline at end of file\n--- a/r.py\n+++ b/r.py\n"
            "@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    assert [(b.path, b.removed, b.added) for b in change_blocks(diff)] == [
        ("q.sql", ("-- old comment",), ("-- new comment",)), ("r.py", ("x = 1",), ("x = 2",))]


def test_revert_undoes_the_edit_keeps_the_addition_and_what_moved_on():
    diff, undone = revert_blocks({"pkg/mod.py": NOW}, edit_blocks(COMMIT))
    assert undone == 1
    assert "-    return x + 2\n+    return x + 1\n" in diff and "-def g" not in diff
    assert revert_blocks({"pkg/mod.py": "def f(x):\n    return 0\n"}, edit_blocks(COMMIT)) == ("", 0)


@pytest.fixture(scope="module")
def frame():
    policies = {"partial-revert": PartialRevertPhase2Policy,
                **{rung: functools.partial(LadderPhase2Policy, rung)
                   for rung in ("commit", "function", "patch")}}
    return srelib.evaluate(policies, tasks=["memory_leak", "circuit_breaker_noop",
                                            "config_change.api_gateway.upstream_units"],
                           pools=["B"], seeds=1, progress=False)


def test_the_no_answer_baseline_repairs_an_edit_and_not_a_missing_line(frame):
    got = frame[frame.policy == "partial-revert"].set_index("task")
    assert got.loc[srelib.task_id("config_change.api_gateway.upstream_units"), "resolved"] == "full"
    assert got.loc["memory_leak", "resolved"] == "no"
    assert got.loc["circuit_breaker_noop", "repair"] == 1.0  # the handover says: no fault


def test_the_ladder_top_rung_plays_the_reference_fix(frame):
    top = frame[frame.policy == "patch"]
    assert (top["repair"] == 1.0).all() and top["oracle"].all()
    assert not frame[frame.policy == "partial-revert"]["oracle"].any()
    assert frame[(frame.policy == "function") & (frame.task == "memory_leak")]["repair"].item() == 0


def test_an_unknown_rung_is_refused():
    with pytest.raises(ValueError, match="valid rungs"):
        LadderPhase2Policy("everything")
