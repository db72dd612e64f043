"""SWE-bench files: the exported dataset, and predictions graded into SWE-bench's reports."""

from __future__ import annotations

import json

import pytest

from srelib.cli import main
from srelib.env.tasks.catalog import list_tasks
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.phase2.repos import unified_diff
from srelib.integrations import swebench

TASK = "memory_leak"
IID = swebench.instance_id(TASK)
REPO = load_repo(get_scenario(TASK).repo)
CHECK = "        if batch_size < 1:\n            raise ValueError(\"batch_size must be at least 1\")\n"


def _breaking_patch() -> str:
    """The reference fix, plus dropping the check a PASS_TO_PASS test holds."""
    fixed = REPO.fixed_tree(TASK)
    path = "orders/handlers/batch.py"
    assert CHECK in fixed[path]
    return unified_diff(REPO.tree, {**fixed, path: fixed[path].replace(CHECK, "")})


NOT_APPLYING = ("--- a/orders/handlers/batch.py\n+++ b/orders/handlers/batch.py\n@@ -1,3 +1,1 @@\n"
                "-a line this file does not have\n-nor this one\n-nor this\n+x\n")


def _write(path, rows):
    path.write_text("".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in rows))
    return path


def test_export_writes_the_train_tasks_and_nothing_of_the_held_out_ones(tmp_path):
    assert main(["swebench", "export", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / swebench.DATASET_FILE).read_text().splitlines()]
    needs_fix = [t for t in list_tasks("classic", "train")
                 if load_repo(get_scenario(t).repo).fix_diff(t) is not None]
    assert [r["instance_id"] for r in rows] == [swebench.instance_id(t) for t in needs_fix]
    row = rows[needs_fix.index(TASK)]
    assert row["repo"] == "srelib/orders_batch" and row["base_commit"] == REPO.commits[0].sha
    assert json.loads(row["FAIL_TO_PASS"]) == REPO.fail_to_pass(TASK)
    assert json.loads(row["PASS_TO_PASS"]) == REPO.pass_to_pass(TASK)
    assert get_scenario(TASK).title in row["problem_statement"] and row["patch"] == REPO.fix_diff(TASK)
    assert (tmp_path / "repos" / "orders_batch" / "orders" / "handlers" / "batch.py").read_text() == \
        REPO.tree["orders/handlers/batch.py"]
    written = "\n".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    for task in list_tasks("classic", "heldout"):
        repo = load_repo(get_scenario(task).repo)
        assert task not in written and not (tmp_path / "repos" / repo.name).exists()
        assert not [t for t in repo.fail_to_pass(task) + repo.pass_to_pass(task) if t in written]
        assert not [f for f in repo.hidden_tests if f in written]
    with pytest.raises(ValueError, match="held out"):
        swebench.instance(list_tasks("classic", "heldout")[0])


def test_grade_follows_swebench_rule_and_report_fields(tmp_path, capsys):
    predictions = _write(tmp_path / "preds.jsonl", [
        {"instance_id": IID, "model_name_or_path": model, "model_patch": patch}
        for model, patch in [("org/gold", REPO.fix_diff(TASK)), ("empty", ""), ("none", None),
                             ("not-applying", NOT_APPLYING), ("breaks", _breaking_patch())]])
    assert main(["swebench", "grade", str(predictions), "--out", str(tmp_path / "out")]) == 0
    assert "org/gold: 1 of 1 resolved" in capsys.readouterr().out
    reports = {m: json.loads((tmp_path / "out" / m / IID / "report.json").read_text())[IID]
               for m in ("org__gold", "empty", "none", "not-applying", "breaks")}
    for entry in reports.values():
        flags = ("patch_is_None", "patch_exists", "patch_successfully_applied", "resolved")
        assert all(type(entry[k]) is bool for k in flags)
        status = entry.get("tests_status")
        if status is not None:  # SWE-bench's rule: every FAIL_TO_PASS and PASS_TO_PASS passes
            assert set(status) == set(swebench.TEST_CATEGORIES)
            assert entry["resolved"] == (not status["FAIL_TO_PASS"]["failure"]
                                         and not status["PASS_TO_PASS"]["failure"])
    gold, breaks = reports["org__gold"], reports["breaks"]
    assert gold["resolved"] and gold["tests_status"]["FAIL_TO_PASS"]["success"] == REPO.fail_to_pass(TASK)
    assert not breaks["resolved"] and breaks["tests_status"]["FAIL_TO_PASS"]["failure"] == []
    assert breaks["tests_status"]["PASS_TO_PASS"]["failure"] == [
        "test_batch_cache.py::test_batch_size_must_be_positive"]
    assert reports["none"] == {"patch_is_None": True, "patch_exists": False,
                               "patch_successfully_applied": False, "resolved": False}
    for model in ("empty", "not-applying"):
        assert reports[model] == {**reports["none"], "patch_is_None": False, "patch_exists": True}
    summary = {m: json.loads((tmp_path / "out" / f"{m}.json").read_text())
               for m in ("org__gold", "empty", "not-applying", "breaks")}
    assert summary["org__gold"]["resolved_ids"] == [IID] and summary["org__gold"]["resolved_instances"] == 1
    assert summary["breaks"]["unresolved_ids"] == [IID] and summary["breaks"]["completed_instances"] == 1
    assert summary["empty"]["empty_patch_ids"] == [IID] and summary["empty"]["completed_ids"] == []
    assert summary["not-applying"]["error_ids"] == [IID] and summary["not-applying"]["error_instances"] == 1


def test_bad_lines_become_problems_and_bad_arguments_exit_2(tmp_path, capsys):
    heldout = list_tasks("classic", "heldout")[0]
    gold = {"instance_id": IID, "model_name_or_path": "m", "model_patch": REPO.fix_diff(TASK)}
    predictions = _write(tmp_path / "preds.jsonl", [
        "{not json\n", "[1, 2]\n", {"instance_id": IID, "model_patch": ""},
        {**gold, "instance_id": "srelib__nope-nope"},
        {**gold, "instance_id": f"srelib__{get_scenario(heldout).repo}-{heldout}"},
        gold, {**gold, "model_patch": ""}])
    assert main(["swebench", "grade", str(predictions), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 6
    problems = json.loads((tmp_path / "out" / swebench.PROBLEMS_FILE).read_text())
    assert [p["line"] for p in problems] == [1, 2, 3, 4, 5, 7]
    assert "not JSON" in problems[0]["error"] and "model_name_or_path" in problems[2]["error"]
    assert all("unknown instance id" in p["error"] for p in problems[3:5])
    assert "second prediction" in problems[5]["error"]
    summary = json.loads((tmp_path / "out" / "m.json").read_text())
    assert summary["resolved_ids"] == [IID] and summary["error_instances"] == 2
    assert summary["submitted_instances"] == 3
    for argv in (["grade", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")],
                 ["grade", str(predictions), "--out", str(predictions)], ["grade", str(predictions)],
                 ["export"]):
        with pytest.raises(SystemExit) as exit_:
            main(["swebench", *argv])
        assert exit_.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_grade_reads_json_predictions_as_swebench_does(tmp_path):
    """A .json file holds a list of predictions or an {instance_id: prediction} object; the
    reports are those of the same predictions as JSONL."""
    gold = {"instance_id": IID, "model_name_or_path": "gold", "model_patch": REPO.fix_diff(TASK)}
    breaks = {**gold, "model_name_or_path": "breaks", "model_patch": _breaking_patch()}
    forms = {"list.json": [gold, breaks], "mapping.json": {IID: gold},
             "lines.jsonl": [gold, breaks]}
    results = {}
    for name, content in forms.items():
        path = tmp_path / name
        path.write_text(json.dumps(content) if name.endswith(".json")
                        else "".join(json.dumps(r) + "\n" for r in content))
        results[name] = swebench.grade_predictions(path, tmp_path / name.replace(".", "_"))
    assert results["list.json"] == results["lines.jsonl"]
    assert results["mapping.json"]["summaries"] == {"gold": results["list.json"]["summaries"]["gold"]}
    summaries = results["list.json"]["summaries"]
    assert summaries["gold"]["resolved_ids"] == [IID] and summaries["breaks"]["unresolved_ids"] == [IID]
    (tmp_path / "scalar.json").write_text("3")
    with pytest.raises(ValueError, match="list of predictions"):
        swebench.grade_predictions(tmp_path / "scalar.json", tmp_path / "o")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        swebench.grade_predictions(tmp_path / "broken.json", tmp_path / "o")
