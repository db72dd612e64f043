"""Naming and listing tasks: suites and splits, task specs in reset/evaluate/widgets, pools over
every suite, and scenario folders (one folder per task, checked by ``srelib tasks check``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import srelib
from srelib.env.tasks.catalog import SPLITS, list_tasks, resolve_tasks, split_of, suite_of
from srelib.env.tasks.pools import HELDOUT_TASKS, POOLS, TRAIN_TASKS
from srelib.env.tasks.lookup import load_repo
from srelib.env.grading.scenario_check import check_folder
from srelib.env.simulation.scenarios import DATA_DIR, FOLDERS, TASKS
from srelib.env.tasks.ids import resolve

ROOT = Path(__file__).resolve().parents[1]
FIX_TASK = next(t for t in TASKS if FOLDERS[t].fix_files())


def _srelib(*args, env=None, timeout=240):
    return subprocess.run([sys.executable, "-m", "srelib", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ suites, splits, specs

def test_classic_suite_is_every_scenario_folder_split_by_its_heldout_flag():
    folders = sorted(p.name for p in DATA_DIR.iterdir() if (p / "scenario.json").is_file())
    assert sorted(list_tasks()) == folders == sorted(srelib.list_tasks("classic"))
    train, heldout = list_tasks("classic", "train"), list_tasks("classic", "heldout")
    assert train and heldout and sorted(train + heldout) == folders
    assert all(not srelib.get_scenario(t).heldout for t in train)
    assert all(srelib.get_scenario(t).heldout for t in heldout)
    assert tuple(train) == TRAIN_TASKS and tuple(heldout) == HELDOUT_TASKS
    assert {suite_of(t) for t in TASKS} == {"classic"}


def test_bad_suite_or_split_names_the_choices():
    with pytest.raises(ValueError, match="valid suites: \\['classic', 'generated'\\]"):
        list_tasks("extra")
    with pytest.raises(ValueError, match="valid splits: \\['train', 'heldout'\\]"):
        list_tasks("classic", "test")
    with pytest.raises(ValueError, match="valid splits"):
        resolve_tasks("classic:test")


def test_task_specs_resolve_ids_suites_splits_and_lists_in_order_once():
    first, held = TRAIN_TASKS[0], HELDOUT_TASKS[0]
    assert resolve_tasks(first) == [first]
    assert resolve_tasks("classic") == list(TASKS)
    assert resolve_tasks("classic:heldout") == list(HELDOUT_TASKS)
    assert resolve_tasks(f"{held}, classic:heldout,{first}") == [*HELDOUT_TASKS, first]
    assert resolve_tasks([first, "classic:train"]) == list(TRAIN_TASKS)
    assert resolve_tasks("classic", "heldout") == list(HELDOUT_TASKS)
    assert resolve_tasks([first, held, "classic:heldout"], "train") == [first]
    with pytest.raises(ValueError, match="names no task of the heldout split"):
        resolve_tasks(first, "heldout")
    with pytest.raises(ValueError, match="names no task"):
        resolve_tasks([])


@pytest.mark.parametrize("bad", ["no_such_task", "memory_leak.nowhere.nothing", ""])
def test_unknown_ids_name_the_suites_and_example_ids(bad):
    for call in (srelib.get_scenario, lambda t: srelib.IncidentEnv().reset(task=t, seed=0),
                 lambda t: srelib.evaluate({"null": object}, tasks=[t], seeds=1, progress=False)):
        with pytest.raises(ValueError) as info:
            call(bad)
        message = str(info.value)
        assert "'classic'" in message and "'generated'" in message and TASKS[0] in message
        assert "<family>.<service>.<site>" in message
    with pytest.raises(ValueError, match=f"^unknown tasks \\[{bad!r}\\]"):
        resolve_tasks([TASKS[0], bad])  # the whole spec is checked before anything runs


# ------------------------------------------------------------------ reset, evaluate, widgets

def test_reset_draws_from_a_suite_within_the_pools_split_deterministically():
    env = srelib.IncidentEnv()
    def drawn(**kwargs):  # the drawn task's name, from the opaque id info holds
        return resolve(env.reset(**kwargs)[1]["task"])

    assert {drawn(task="classic:heldout", pool="D", seed=s) for s in range(12)} == set(HELDOUT_TASKS)
    again = [drawn(task="classic", pool="C", seed=s) for s in range(12)]
    assert set(again) <= set(TRAIN_TASKS) and len(set(again)) > 1
    assert again == [drawn(task="classic", pool="C", seed=s) for s in range(12)]
    assert drawn(task="classic", seed=3) in TRAIN_TASKS  # no pool: train split
    assert drawn(task="classic:heldout", seed=3) in HELDOUT_TASKS
    with pytest.raises(ValueError, match="no task in pool C"):
        env.reset(task="classic:heldout", pool="C", seed=0)


def test_reset_by_id_is_unchanged_by_the_catalog():
    """Naming a task keeps the seed stream of before: the pool's draw happens and is ignored."""
    env = srelib.IncidentEnv()
    obs, info = env.reset(task=TRAIN_TASKS[-1], pool="C", seed=5)
    assert info["task"] == srelib.task_id(TRAIN_TASKS[-1])
    with pytest.raises(ValueError, match="not in pool D"):
        env.reset(task=TRAIN_TASKS[0], pool="D", seed=5)


def test_evaluate_takes_suite_names_and_keeps_each_pools_split():
    from srelib.policies import NullPhase1Policy

    frame = srelib.evaluate({"null": NullPhase1Policy}, tasks="classic:heldout",
                            pools=["C", "D"], seeds=1, progress=False)
    assert set(frame["pool"]) == {"D"} and sorted(frame["task"]) == sorted(HELDOUT_TASKS)


def test_the_stepper_opens_any_id_or_suite():
    pytest.importorskip("ipywidgets")
    from srelib.widgets import EpisodeStepper

    stepper = EpisodeStepper(task="classic:heldout", pool="D", seed=1)
    assert stepper.task == HELDOUT_TASKS[0]
    assert set(HELDOUT_TASKS) <= set(stepper.task_picker.options)


# ------------------------------------------------------------------ pools over every suite

def test_pools_are_a_split_and_a_mode():
    for pool in POOLS.values():
        assert pool.split in SPLITS
        assert tuple(pool.tasks) == tuple(list_tasks("classic", pool.split))
        assert all(pool.accepts(t) == (split_of(t) == pool.split) for t in TASKS)
    assert [p.name for p in POOLS.values() if p.split == "heldout"] == ["D"]


@pytest.fixture(scope="module")
def generated():
    """One generated train task and one held-out task (the suite is cached on disk)."""
    pytest.importorskip("srelib.env.tasks.taskgen")
    return list_tasks("generated", "train")[0], list_tasks("generated", "heldout")[0]


def test_generated_tasks_are_listed_by_split_and_named_by_the_catalog(generated):
    train, heldout = list_tasks("generated", "train"), list_tasks("generated", "heldout")
    assert set(train).isdisjoint(heldout) and not set(train + heldout) & set(TASKS)
    assert sorted(train + heldout) == sorted(list_tasks("generated"))
    for task in generated:
        assert "." in task and suite_of(task) == "generated"
    assert split_of(generated[0]) == "train" and split_of(generated[1]) == "heldout"
    assert resolve_tasks("generated:heldout") == heldout


def test_pools_keep_their_meaning_over_generated_tasks(generated):
    train, heldout = generated
    assert [p for p in POOLS if POOLS[p].accepts(train)] == ["A", "B", "C"]
    assert [p for p in POOLS if POOLS[p].accepts(heldout)] == ["D"]
    env = srelib.IncidentEnv()
    for pool in "ABC":
        assert env.reset(task=train, pool=pool, seed=2)[1]["task"] == srelib.task_id(train)
    with pytest.raises(ValueError, match="not in pool D"):
        env.reset(task=train, pool="D", seed=2)
    with pytest.raises(ValueError, match="not in pool C"):
        env.reset(task=heldout, pool="C", seed=2)
    obs, info = env.reset(task="generated", pool="D", seed=4)
    assert resolve(info["task"]) in list_tasks("generated", "heldout")
    assert srelib.task_id(env.scenario.name) == info["task"] and obs["current_phase"] == 1


# ------------------------------------------------------------------ scenario folders

def _copy(task: str, tmp_path: Path, name: str | None = None) -> Path:
    folder = tmp_path / (name or task)
    shutil.copytree(DATA_DIR / task, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if name:
        _edit(folder, lambda raw: raw.update(name=name))
    return folder


def _edit(folder: Path, change) -> None:
    path = folder / "scenario.json"
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw, indent=2))


@pytest.mark.parametrize("task", TASKS)
def test_every_classic_folder_checks_clean(task):
    assert check_folder(DATA_DIR / task) == []


def test_check_names_schema_problems(tmp_path):
    bad_json = _copy(FIX_TASK, tmp_path, "broken")
    (bad_json / "scenario.json").write_text("{not json")
    assert check_folder(bad_json) == [f"broken/scenario.json: not valid JSON (Expecting property "
                                      "name enclosed in double quotes: line 1 column 2 (char 1))"]
    for case, (change, expected) in enumerate((
            (lambda raw: raw.update(colour="red"), "unknown keys ['colour']"),
            (lambda raw: raw.update(involved_services=["orders", "billing"]),
             "unknown services ['billing']"),
            (lambda raw: raw.update(name="other"), "must match the folder name"),
            (lambda raw: raw.pop("tests"), "missing 'tests'"),
            (lambda raw: raw["tests"].update(flaky=[]), "tests: unknown keys ['flaky']"))):
        folder = _copy(FIX_TASK, tmp_path / str(case), "new_task")
        _edit(folder, change)
        problems = check_folder(folder)
        assert len(problems) == 1 and expected in problems[0], problems
    assert check_folder(tmp_path / "nowhere") == [f"{tmp_path / 'nowhere'} is not a folder"]
    assert check_folder(_copy(FIX_TASK, tmp_path / "again")) == [
        f"a task named {FIX_TASK!r} already exists ({DATA_DIR / FIX_TASK})"]


def test_check_names_repository_and_test_problems_together(tmp_path):
    folder = _copy(FIX_TASK, tmp_path, "tangled")
    f2p = FOLDERS[FIX_TASK].fail_to_pass

    def tangle(raw):
        raw["bad_commit"] = "0000000"
        for deploys in raw["deploys"].values():
            for d in deploys:
                d["sha"] = "0000000" if d.get("bad") else d.get("sha")
        raw["tests"]["fail_to_pass"] = [*f2p, "test_nowhere.py::test_missing"]

    _edit(folder, tangle)
    problems = check_folder(folder)
    assert problems == [f"bad_commit '0000000' is not a commit of repo '{FOLDERS[FIX_TASK].scenario.repo}'",
                        "test id 'test_nowhere.py::test_missing' is not in repo "
                        f"'{FOLDERS[FIX_TASK].scenario.repo}''s hidden tests"]
    _edit(folder, lambda raw: raw.update(repo="no_such_repo"))
    assert check_folder(folder)[-1].startswith("repo: unknown repo 'no_such_repo'")


def test_check_runs_the_tests_before_and_after_the_fix(tmp_path):
    folder = _copy(FIX_TASK, tmp_path, "swapped")
    f2p, p2p = FOLDERS[FIX_TASK].fail_to_pass, FOLDERS[FIX_TASK].pass_to_pass
    _edit(folder, lambda raw: raw["tests"].update(fail_to_pass=[*f2p, p2p[0]],
                                                  pass_to_pass=[*p2p[1:], f2p[0]]))
    problems = check_folder(folder)
    assert f"FAIL_TO_PASS test {p2p[0]} already passes without the fix" in problems
    assert f"PASS_TO_PASS test {f2p[0]} fails on the unfixed tree" in problems


def test_check_names_a_fix_that_does_not_apply_or_does_not_resolve(tmp_path):
    repo = load_repo(FOLDERS[FIX_TASK].scenario.repo)
    fixed = FOLDERS[FIX_TASK].fix_files()
    unchanged = _copy(FIX_TASK, tmp_path, "unchanged")
    for rel in fixed:  # the "fix" rewrites each file as it already is: an empty patch
        (unchanged / "fix" / rel).write_text(repo.tree[rel])
    assert check_folder(unchanged) == ["the fix does not apply: empty patch: no file changes "
                                       "outside the tests"]
    half = _copy(FIX_TASK, tmp_path, "half")
    rel = sorted(fixed)[0]
    (half / "fix" / rel).write_text(repo.tree[rel] + "\n# a comment is not a fix\n")
    [problem] = check_folder(half)
    assert problem.startswith("the fix does not resolve the task (no); failing with the fix: [")
    missing = _copy(FIX_TASK, tmp_path, "nofix")
    shutil.rmtree(missing / "fix")
    assert check_folder(missing) == ["needs_fix is true but the folder has no fix/"]


def test_cli_check_prints_each_problem_and_fails(tmp_path):
    ok = _srelib("tasks", "check", DATA_DIR / FIX_TASK)
    assert ok.returncode == 0 and ok.stdout.strip() == f"{DATA_DIR / FIX_TASK}: ok"
    folder = _copy(FIX_TASK, tmp_path, "twice_wrong")
    _edit(folder, lambda raw: raw.update(colour="red", repo="no_such_repo"))
    bad = _srelib("tasks", "check", folder)
    lines = bad.stdout.strip().splitlines()
    assert bad.returncode == 1 and lines[-1] == f"{folder}: 2 problem(s)"
    assert lines[0].startswith("problem: twice_wrong/scenario.json: unknown keys ['colour']")
    assert lines[1].startswith("problem: repo: unknown repo 'no_such_repo'")


def test_adding_a_folder_is_all_it_takes_to_add_a_task(tmp_path):
    """A copy of the package with one more folder has one more task: listed, playable, graded."""
    package = tmp_path / "srelib"
    shutil.copytree(ROOT / "srelib", package, ignore=shutil.ignore_patterns("__pycache__"))
    _copy(FIX_TASK, package / "env" / "simulation" / "scenario_data", "added_task")
    code = (
        "import srelib\n"
        "from srelib.env.grading.pipeline import grade_patch\n"
        "from srelib.env.tasks.lookup import load_repo\n"
        "assert srelib.__file__.startswith(%r)\n"
        "assert 'added_task' in srelib.list_tasks('classic', 'train')\n"
        "obs, info = srelib.IncidentEnv().reset(task='added_task', pool='C', seed=0)\n"
        "sc = srelib.get_scenario('added_task')\n"
        "repo = load_repo(sc.repo)\n"
        "assert set(repo.tasks) >= {'added_task', %r}\n"
        "print(grade_patch(sc.repo, 'added_task', repo.fix_diff('added_task'))['resolved'])\n"
    ) % (str(package), FIX_TASK)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "full"
    assert _srelib("tasks", "check", package / "env" / "simulation" / "scenario_data" / "added_task").returncode == 0


# ------------------------------------------------------------------ the CLI lists suites

def test_cli_lists_the_generated_suite_counts(generated):
    from srelib.env.tasks.taskgen import generated_suite

    result = _srelib("tasks", "--suite", "generated")
    assert result.returncode == 0, result.stderr
    for title in ("Tasks per family and split", "Tasks per culprit service and split",
                  "Rejected candidates by reason"):
        assert f"## {title}" in result.stdout
    rows = {}
    for line in result.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 1:
            rows.setdefault(cells[0], cells[1:])
    report = generated_suite()
    for key in ("family", "service"):
        values = [getattr(info, key) for info in report.tasks.values()]
        for value in set(values):
            splits = [info.split for info in report.tasks.values() if getattr(info, key) == value]
            assert rows[value][-1] == str(len(splits)), (value, rows[value])
    for reason, ids in report.rejected.items():
        assert rows[reason] == [str(len(ids))]


# ------------------------------------------------------------------ tables of a suite

def _report():
    """A small suite report shaped like srelib.env.tasks.taskgen's: 2 families x 3 services x splits."""
    from types import SimpleNamespace

    tasks = {f"{fam}.{svc}.site{k}": SimpleNamespace(family=fam, service=svc, site=f"site{k}",
                                                     split="heldout" if fam == "deadlock" else "train")
             for fam in ("memory_leak", "deadlock") for svc in ("orders", "auth", "cache")
             for k in range(2)}
    return SimpleNamespace(tasks=tasks, rejected={"null above 0.15": ["a.b.c"], "no F2P": ["d.e.f", "g.h.i"]},
                           seconds=12.34)


def test_generated_tables_count_families_services_splits_and_rejections():
    from srelib.analysis.suite_tables import generated_tables

    tables = generated_tables(_report())
    families = tables["families"].set_index("family")
    assert families.loc["memory_leak", "train"] == 6 and families.loc["deadlock", "heldout"] == 6
    assert families.loc["total", "total"] == 12
    assert tables["services"].set_index("service").loc["auth", "total"] == 4
    assert tables["rejections"].values.tolist() == [["no F2P", 2], ["null above 0.15", 1]]
    assert tables["summary"].values.tolist() == [["tasks", "12"], ["candidates", "15"],
                                                 ["admission rate", "80.0%"],
                                                 ["generation s", "12.3"]]


def test_family_sample_takes_a_few_tasks_of_each_family_and_split_reproducibly():
    from srelib.analysis.suite_tables import family_sample

    report = _report()
    sample = family_sample(2, report=report)
    assert sample == family_sample(2, report=report) and len(sample) == 4
    assert sorted(t.split(".")[0] for t in sample) == ["deadlock"] * 2 + ["memory_leak"] * 2
    assert sample == [t for t in report.tasks if t in sample]  # suite order
    assert family_sample(None, report=report) == list(report.tasks)


def test_family_scores_summarise_each_family_and_split_per_policy():
    import pandas as pd

    from srelib.analysis.suite_tables import family_scores

    report = _report()
    rows = [{"policy": p, "task": t, "final": score}
            for t in report.tasks for p, score in (("weak", 0.1), ("strong", 0.9))]
    rows.append({"policy": "weak", "task": TASKS[0], "final": 1.0})  # a classic task: left out
    table = family_scores(pd.DataFrame(rows), report=report).set_index(["family", "split"])
    assert list(table.columns) == ["tasks", "weak", "strong"]
    assert table.loc[("deadlock", "heldout"), "tasks"] == 6
    assert table.loc[("memory_leak", "train"), "weak"] == "0.10 (0.10-0.10)"
    assert table.loc[("memory_leak", "train"), "strong"] == "0.90 (0.90-0.90)"
