"""Localisation columns on hand-built trajectories (memory_leak: culprit orders, bad commit
a3f7c91, bad file orders/handlers/batch.py with BatchProcessor.flush at lines 59-69)."""

import pytest

from srelib.results.localisation import LOCALISATION_COLUMNS, localisation, partial_repair, touched_lines
from srelib.results import COLUMNS, Episode

TASK = "memory_leak"
BAD = "orders/handlers/batch.py"


def record(step, phase, action_type, target=None, minute=0, valid=True, effect=None, **params):
    return {"step": step, "phase": phase, "minute": minute, "valid": valid, "error": None,
            "reward": 0.0, "statuses": {}, "effect": effect,
            "action": {"action_type": action_type, "target_service": target, "parameters": params}}


def patch(path, line, old, new):
    return (f"--- a/{path}\n+++ b/{path}\n@@ -{line},1 +{line},1 @@\n-{old}\n+{new}\n")


def test_phase1_rank_time_and_evidence_of_the_culprit():
    records = [record(1, 1, "view_alerts", minute=1),
               record(2, 1, "query_logs", "payment", minute=3),
               record(3, 1, "check_metrics", "auth", minute=4, valid=False),  # invalid: no check
               record(4, 1, "check_metrics", "orders", minute=6),
               record(5, 1, "check_deploy_history", "orders", minute=7),
               record(6, 1, "restart_service", "orders", minute=9)]  # not a check
    cols = localisation(TASK, "p1_only", records)
    assert cols["culprit_rank"] == 2 and cols["culprit_step"] == 4 and cols["culprit_minutes"] == 6
    assert cols["evidence_viewed"] == "deploys,metrics" and cols["evidence_coverage"] == 0.4
    assert all(cols[c] is None for c in ("commit_diffed", "bad_file_read", "bad_file_edited"))


def test_phase1_culprit_never_checked():
    cols = localisation(TASK, "joint", [record(1, 1, "query_logs", "payment")])
    assert cols["culprit_rank"] is None and cols["culprit_step"] is None
    assert cols["evidence_coverage"] == 0.0 and cols["evidence_viewed"] == ""


def test_phase2_read_the_right_file_and_edit_the_bad_function():
    diff = patch(BAD, 66, "        self._pending = []", "        self._pending.clear()")
    records = [record(0, 1, "transition_to_phase2", effect={"belief": {}, "oracle": True}),
               record(1, 2, "read_file", path="README.md"),
               record(2, 2, "get_file_diff", commit_sha="A3F7"),
               record(3, 2, "read_file", path=f"./{BAD}"),
               record(4, 2, "read_file", path="README.md"),
               record(5, 2, "propose_patch", effect={"diff": diff}, diff=diff),
               record(6, 2, "read_file", path="orders/models.py")]  # after the patch: not counted
    cols = localisation(TASK, "p2_only", records)
    assert cols["culprit_rank"] is None  # phase 1 not played
    assert (cols["commit_diffed"], cols["bad_file_read"], cols["bad_file_edited"],
            cols["bad_function_edited"], cols["files_read_before_patch"]) == (1, 1, 1, 1, 2)


def test_phase2_never_opened_anything():
    records = [record(1, 2, "declare_no_change", effect={"reason": "x"}, reason="x")]
    cols = localisation(TASK, "p2_only", records)
    assert (cols["commit_diffed"], cols["bad_file_read"], cols["bad_file_edited"],
            cols["bad_function_edited"], cols["files_read_before_patch"]) == (0, 0, 0, 0, 0)


def test_phase2_right_file_wrong_function_and_an_innocent_commit():
    diff = patch(BAD, 2, "The nightly importer", "The importer")  # the module docstring
    records = [record(1, 2, "get_file_diff", commit_sha="0000000"),
               record(2, 2, "get_file_diff", commit_sha="a3f7c91", valid=False),
               record(3, 2, "propose_patch", effect={"diff": diff}, diff=diff)]
    cols = localisation(TASK, "p2_only", records)
    assert (cols["commit_diffed"], cols["bad_file_read"], cols["bad_file_edited"],
            cols["bad_function_edited"]) == (0, 0, 1, 0)


def test_a_task_with_nothing_to_find_has_no_phase2_targets():
    cols = localisation("circuit_breaker_noop", "p2_only",
                        [record(1, 2, "read_file", path="README.md")])
    assert cols["commit_diffed"] is None and cols["bad_function_edited"] is None
    assert cols["files_read_before_patch"] == 1


def test_partial_repair_fields_come_from_the_score_when_present():
    assert partial_repair({"fail_to_pass_rate": 0.5, "pass_to_pass_rate": 1.0}) == {
        "fail_to_pass_rate": 0.5, "pass_to_pass_rate": 1.0}
    assert partial_repair({"patch": None})["pass_to_pass_rate"] is None


def test_touched_lines_reads_deletions_and_both_sides_of_insertions():
    diff = ("--- a/x.py\n+++ b/x.py\n@@ -3,3 +3,3 @@\n a\n-b\n+c\n d\n"
            "@@ -10,2 +10,3 @@\n e\n+f\n g\n")
    assert touched_lines(diff) == {"x.py": {4, 10, 11}}
    assert touched_lines("not a diff") == {}


def test_every_frame_row_carries_the_columns():
    episode = Episode(policy="p", task=TASK, pool="C", mode="joint", seed=0,
                      steps=[record(1, 1, "check_metrics", "orders", minute=2)])
    row = episode.row()
    assert tuple(row) == COLUMNS and set(LOCALISATION_COLUMNS) <= set(row)
    assert row["culprit_rank"] == 1 and row["files_read_before_patch"] == 0


def test_an_unknown_task_or_mode_is_refused():
    with pytest.raises(ValueError, match="no_such_task"):
        localisation("no_such_task", "joint", [])
    with pytest.raises(ValueError, match="valid modes"):
        localisation(TASK, "bogus", [])


def _rec(step, kind, target=None, **params):
    return {"step": step, "phase": 1, "minute": step, "valid": True,
            "action": {"action_type": kind, "target_service": target, "parameters": params}}


def test_blame_columns_rank_blames_first_then_checks():
    from srelib.results.localisation import hops, phase1_columns

    records = [_rec(1, "check_metrics", "orders"), _rec(2, "query_logs", "database"),
               _rec(3, "check_metrics", "auth"),
               _rec(4, "declare_root_cause", service="payment", fault_class="deadlock",
                    root_cause="x"),
               _rec(5, "declare_root_cause", service="database", fault_class="memory_leak",
                    root_cause="x")]
    cols = phase1_columns("database", records, "memory_leak")
    assert (cols["culprit_top1"], cols["culprit_top3"], cols["class_correct"]) == (1, 1, 1)
    assert (cols["hop_distance"], cols["blame_step"], cols["blame_minutes"]) == (0, 5, 5)
    wrong = phase1_columns("queue", records[:4], "memory_leak")
    # ranking: payment (blamed), orders, database, auth (checked): queue is in none of them
    assert (wrong["culprit_top1"], wrong["culprit_top3"], wrong["class_correct"]) == (0, 0, 0)
    assert wrong["hop_distance"] == hops("payment", "queue") == 1 and wrong["blame_step"] is None
    assert phase1_columns("auth", records[:4])["culprit_top3"] == 0  # 4th: payment, orders, database
    assert phase1_columns("orders", records[:3])["hop_distance"] is None  # nothing blamed
    assert hops("cache", "queue") == 4 and hops("cache", "nowhere") is None


def test_a_handoff_and_a_rollback_blame_and_an_invalid_declaration_does_not():
    from srelib.results.localisation import phase1_columns

    records = [_rec(1, "rollback_deploy", "payment"),
               {**_rec(2, "declare_root_cause", service="orders", fault_class="deadlock"),
                "valid": False},
               _rec(3, "transition_to_phase2",
                    belief={"suspected_service": "orders", "suspected_fault_class": "memory_leak"})]
    cols = phase1_columns("orders", records, "memory_leak")
    assert (cols["culprit_top1"], cols["class_correct"], cols["blame_step"]) == (1, 1, 3)
    before = phase1_columns("orders", records[:2], "memory_leak")  # only the rollback counts
    assert (before["culprit_top1"], before["class_correct"], before["hop_distance"]) == (0, 0, 1)


def test_frames_and_saved_runs_carry_the_blame_columns_and_the_summary_reads_them(tmp_path):
    import srelib
    from srelib import scripted_policy
    from srelib.results.localisation import DIAGNOSIS_SUMMARY, diagnosis_summary

    names = ("null", "reference", "heuristic")
    frame = srelib.evaluate({n: scripted_policy(n) for n in names}, tasks=[TASK], pools=["C"],
                            seeds=2, out=tmp_path / "run", progress=False)
    saved = srelib.load_run(tmp_path / "run")
    columns = ["policy", "seed", "culprit_top1", "culprit_top3", "class_correct", "hop_distance",
               "blame_minutes"]
    key = ["policy", "seed"]
    assert frame[columns].sort_values(key).reset_index(drop=True).astype(str).equals(
        saved[columns].sort_values(key).reset_index(drop=True).astype(str))
    table = diagnosis_summary(frame, ["reference", "null"]).set_index("policy")
    assert list(table.columns) == list(DIAGNOSIS_SUMMARY) and list(table.index) == ["reference", "null"]
    reference, null = table.loc["reference"], table.loc["null"]
    assert (reference.culprit_top1, reference.class_correct, reference.hop_distance) == (1, 1, 0)
    assert reference.blamed_culprit == 1 and reference.blame_minutes >= 0
    assert (null.culprit_top1, null.culprit_top3, null.blamed_culprit) == (0, 0, 0)
    with pytest.raises(KeyError, match="no phase-1 episode of nobody"):
        diagnosis_summary(frame, ["nobody"])
