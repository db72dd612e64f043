"""Red team on phase 2's surface (issue 45): the git-shape rule, the learned commit model, and a
hash lookup on the public suite and on a private keyed one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from argparse import Namespace
from pathlib import Path

import pytest

from srelib.analysis.tell_audit import MAX_OVER_CHANCE, Surface, _shape_fields, learned_commit_rows
from srelib.env.tasks.taskgen import generated_suite

from tests.red_team_history import (HashLookup, burst_rule, classic_rule_rate, family_vote,
                                   family_vote_rate, gap_rule, lookup_rate, most_removed_py_rule,
                                   named_rate, named_site_rule, noon_rule, own_test_rule, rule_rate,
                                   sprint_body_rule)

ROOT = Path(__file__).resolve().parents[1]


def _split(split: str) -> list[str]:
    return sorted(t for t, info in generated_suite().tasks.items() if info.split == split)


@pytest.mark.parametrize("which", ["odd train", "heldout"])
def test_the_own_test_rule_stays_near_chance(which):
    """"The newest commit touching a module and its own test" named the bad commit in 1.00 of
    generated tasks; now it is at most chance + 25 points (odd-position train, held-out)."""
    tasks = _split("train")[1::2] if which == "odd train" else _split("heldout")
    rate, chance = rule_rate(tasks)
    assert rate <= chance + MAX_OVER_CHANCE, (rate, chance)


#: The fourth attacks (issue 45 red team, on main at 6a99c02, train odd / held-out, n=40):
#: noon 1.00 / 1.00, burst 0.88 / 0.85, gap 0.48 / 0.35, sprint body 1.00 / 1.00, named site
#: 1.00 / 1.00, against chance 0.04.
FOURTH = {"noon": noon_rule, "burst": burst_rule, "gap": gap_rule, "sprint body": sprint_body_rule,
          "named site": named_site_rule}


@pytest.mark.parametrize("which", ["odd train", "heldout"])
@pytest.mark.parametrize("rule", sorted(FOURTH))
def test_no_date_or_naming_rule_finds_the_bad_commit(rule, which):
    """Every commit is dated by one process blind to the bad commit, a body's area is its own
    commit's and a commit that names a site names any of the repository's: each rule stays at
    most chance + 25 points."""
    tasks = _split("train")[1::2] if which == "odd train" else _split("heldout")
    rate, chance = named_rate(FOURTH[rule], tasks[::3])
    assert rate <= chance + MAX_OVER_CHANCE, (rule, rate, chance)


@pytest.mark.parametrize("which", ["odd train", "heldout"])
def test_the_file_tree_does_not_vote_for_the_family(which):
    """Decoy sites were drawn from the task's own family half the time, so the family most of
    the tree's modules belong to was the bug's in 0.81 (chance 0.14); now their shapes are
    drawn whatever the family."""
    tasks = _split("train")[1::2] if which == "odd train" else _split("heldout")
    rate, chance = family_vote_rate(tasks[::3])
    assert rate <= chance + MAX_OVER_CHANCE, (rate, chance)


def test_the_date_and_naming_rules_read_the_log_they_are_given():
    log = [{"sha": "d4", "date": "2025-01-15T15:10:00Z", "message": "b: one-shot b",
            "files": ["pkg/b.py"]},
           {"sha": "c3", "date": "2025-01-15T13:00:00Z", "message": "readme: describe the b thing",
            "files": ["README.md"]},
           {"sha": "b2", "date": "2025-01-15T12:20:00Z",
            "message": "a: bounded a\n\nPart of this sprint's a work.", "files": ["pkg/a.py"]},
           {"sha": "a1", "date": "2025-01-15T07:30:00Z", "message": "b: add the b thing",
            "files": ["pkg/b.py", "tests/test_b.py"]}]
    assert noon_rule(log) == ["b2"] and burst_rule(log) == ["b2"] and gap_rule(log) == ["b2"]
    assert sprint_body_rule(log) == ["b2"] and named_site_rule(log) == ["d4"]
    assert noon_rule(log[:1]) == ["d4"] and sprint_body_rule(log[:2]) == [] == named_site_rule(log[2:])


@pytest.mark.parametrize("rule", ["noon", "burst", "gap"])
def test_no_date_rule_finds_a_classic_bad_commit(rule):
    """The classic histories put the bad commit alone before the afternoon burst (noon and
    burst rules 0.89 on seeds 0 and 1); re-dated, the incident day is busy before it too, so
    each date rule stays at most chance + 25 points while every later commit still merges
    after the bad deploy (test_env_scenarios)."""
    for seed in (0, 1):
        rate, chance = classic_rule_rate(FOURTH[rule], seed=seed)
        assert rate <= chance + MAX_OVER_CHANCE, (rule, seed, rate, chance)


def test_the_family_vote_counts_the_trees_modules():
    from srelib.env.tasks.taskgen import candidates
    from srelib.env.tasks.taskgen.bases import BASES
    from srelib.env.tasks.taskgen.recipes import module_path
    from srelib.env.tasks.taskgen.shape_lib import SHAPES

    cs = [c for c in candidates().values() if c.service == "orders" and not SHAPES[c.shape].module.startswith("common/")]
    one, other = cs[0], next(c for c in cs if SHAPES[c.shape].family != SHAPES[cs[0].shape].family)
    paths = [module_path(SHAPES[c.shape], c) for c in (one, one, other)]
    log = [{"files": [paths[0], "tests/test_x.py"]}, {"files": [paths[2]]}, {"files": ["README.md"]}]
    package = BASES["orders"].package
    assert set(family_vote(log, package)) >= {SHAPES[one.shape].family, SHAPES[other.shape].family}
    log.append({"files": [module_path(SHAPES[c.shape], c)
                          for c in cs if SHAPES[c.shape].family == SHAPES[one.shape].family][:3]})
    assert family_vote(log, package) == [SHAPES[one.shape].family]


def test_the_rule_reads_the_log_it_is_given():
    log = [{"sha": "c3", "files": ["README.md"]},
           {"sha": "b2", "files": ["pkg/cache.py", "tests/test_cache.py"]},
           {"sha": "a1", "files": ["pkg/core.py", "tests/test_core.py"]}]
    assert own_test_rule(log) == "b2"
    assert own_test_rule(log[:1]) is None


def test_the_learned_commit_model_stays_under_the_bar():
    from srelib.analysis.tell_audit import audit

    rows = {r["field"]: r for r in audit("generated") if r["target"] == "bad_commit"}
    learned = rows["commit shape [learned]"]
    assert learned["passes"], learned
    for field in ("files touched [position]", "test with its module [position]",
                  "lines added [position]", "lines removed [position]",
                  "message template [masked]", "module-and-test rank from newest [position]"):
        assert rows[field]["passes"], rows[field]


def test_the_classic_audit_finds_no_commit_tell():
    """The hand-written histories' bad commits were the ones that remove lines (0.72 held-out,
    bar 0.42): innocent commits now rewrite code, tests and docs too. Every bad-commit row of
    the classic audit passes, the learned model over every commit shape included."""
    from srelib.analysis.tell_audit import audit

    rows = [r for r in audit("classic") if r["target"] == "bad_commit"]
    assert "commit shape [learned]" in {r["field"] for r in rows}
    assert all(r["passes"] for r in rows), [r for r in rows if not r["passes"]]


def test_the_commit_that_removes_most_code_is_not_the_bad_one():
    """"The commit that removes the most lines from a .py file" named the bad commit of 7 of the
    9 classic fault tasks (0.78); now it stays at most chance + 25 points, on what an episode
    shows."""
    rate, chance = classic_rule_rate(most_removed_py_rule, seed=1)
    assert rate <= chance + MAX_OVER_CHANCE, (rate, chance)


def test_the_code_removal_rule_reads_the_log_it_is_given():
    log = [{"sha": "c3", "files": ["README.md"], "diff": "-a\n-b\n-c\n"},
           {"sha": "b2", "files": ["pkg/m.py"], "diff": "-x\n-y\n+z\n"},
           {"sha": "a1", "files": ["pkg/m.py"], "diff": "+x\n+y\n"}]
    assert most_removed_py_rule(log) == ["b2"]
    assert most_removed_py_rule(log[:1] + log[2:]) == []


def _synthetic(task: str, bad_at: int, n: int, marked: bool, dated: str = "") -> Surface:
    """A task of ``n`` one-file commits whose bad one (at ``bad_at``), when ``marked``, alone
    touches a module with its own test and removes lines. ``dated``: no dates (""), every
    commit an hour after the last ("even"), or so but the bad one alone on the newest day's
    noon and the later ones that afternoon ("noon", the tell of main at 6a99c02)."""
    commits = []
    for k in range(n):
        bad = k == bad_at
        files = ["pkg/site.py", "tests/test_site.py"] if bad and marked else [f"pkg/m{k % 3}.py"]
        diff = "+x\n" * (k % 4 + 1) + ("-y\n-z\n" if bad and marked else "")
        commits.append({"sha": f"{task[-2:]}{k:05d}", "files": files, "diff": diff,
                        "message": f"change {k % 5}"})
        if dated:
            hour = 8 + k if dated == "even" else k if k < bad_at else 12 if bad else 13 + k - bad_at
            day = 9 if dated == "noon" and k < bad_at else 15
            commits[-1]["date"] = f"2025-01-{day:02d}T{hour % 24:02d}:{(7 * k) % 60:02d}:00Z"
    s = Surface(task, "orders", "memory", True, commits[bad_at]["sha"])
    s.commits = [c["sha"] for c in commits]
    s.commit_fields = {"place from oldest [position]": [str(k) for k in range(n)],
                       "place from newest [position]": [str(n - 1 - k) for k in range(n)],
                       **_shape_fields(commits)}
    return s


@pytest.mark.parametrize("marked", [True, False])
def test_the_learned_model_finds_a_shape_tell_and_only_one(marked):
    """The learner is not a no-op: where the bad commit alone has a shape it names it in every
    held-out task; where it has none it stays near chance."""
    train = [_synthetic(f"t{k:02d}", (k * 7) % 9, 9, marked) for k in range(40)]
    test = [_synthetic(f"h{k:02d}", (k * 5) % 9, 9, marked) for k in range(30)]
    row = learned_commit_rows(train, test)[0]
    if marked:
        assert row["rate"] == 1.0 and not row["passes"]
    else:
        assert row["passes"] and row["rate"] <= row["chance"] + MAX_OVER_CHANCE


@pytest.mark.parametrize("dated", ["noon", "even"])
def test_the_audit_reads_commit_dates(dated):
    """The date fields and the learner over them catch the noon tell (the bad commit alone at
    noon, the earlier ones days before) and pass dates that mark nothing."""
    from srelib.analysis.tell_audit import _marked_hits

    train = [_synthetic(f"t{k:02d}", 2 + (k * 7) % 7, 9, False, dated) for k in range(40)]
    test = [_synthetic(f"h{k:02d}", 2 + (k * 5) % 7, 9, False, dated) for k in range(30)]
    chance = 1 / 9
    rates = {f: sum(_marked_hits(train, test, f, "bad_commit")) / len(test)
             for f in ("time of day (2 h) [position]", "gap to previous (log2 min) [position]")}
    rates["commit shape [learned]"] = learned_commit_rows(train, test)[0]["rate"]
    if dated == "noon":
        assert all(r == 1.0 for r in rates.values()), rates
    else:
        assert all(r <= chance + MAX_OVER_CHANCE for r in rates.values()), rates


def test_a_hash_table_of_the_public_generator_names_no_task():
    """On main at 04832c5 the shas named the task in 0.998 of episodes: now a table over the
    task list names none. A policy holding srelib *and* the seed recomputes the public key's
    surface, which is why published numbers come from a private suite."""
    tasks = sorted(generated_suite().tasks)[::12]
    assert lookup_rate(tasks, seed=3, recompute=False) == 0.0
    assert lookup_rate(tasks, seed=3, recompute=True) >= 0.95


_PLAY = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    from srelib.env.core import IncidentEnv
    from srelib.env.tasks.taskgen.tasks import task_history
    out = []
    for task in json.loads(sys.argv[1]):
        env = IncidentEnv()
        obs, info = env.reset(task=task, mode="p2_only", seed=3)
        log = env.step({"action_type": "get_git_log", "parameters": {"n_commits": 50}})[0]
        out.append({"task": task, "id": info["task"], "bad": obs["bad_commit_sha"],
                    "commits": log["action_result"]["commits"],
                    "stored": [c.sha for c in task_history(task).commits]})
    print(json.dumps(out))
""")


def _play(tasks: list[str], key: Path | None, tmp: Path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SRELIB_CACHE": str(tmp / "cache")}
    env.pop("SRELIB_SUITE_KEY", None)
    env.pop("SRELIB_SUITE_DIR", None)
    if key is not None:
        env.update(SRELIB_SUITE_KEY=str(key), SRELIB_SUITE_DIR=str(tmp / "suite"))
    run = subprocess.run([sys.executable, "-c", _PLAY, json.dumps(tasks)], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def keyed_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keyed")
    tasks = sorted(generated_suite().tasks)[::40]
    key, other = tmp / "lab.key", tmp / "other.key"
    key.write_bytes(os.urandom(32))
    other.write_bytes(os.urandom(32))
    return tasks, _play(tasks, key, tmp), _play(tasks, key, tmp), _play(tasks, other, tmp)


def test_a_policy_without_the_key_reads_nothing_off_a_keyed_suite(keyed_runs):
    """The hash lookup (table and public-key recompute), and the public id table, name no task
    of a keyed suite: what is left to such a policy is what the shallow agents have."""
    from srelib.env.tasks.ids import resolve

    tasks, runs, _, _ = keyed_runs
    cheat = HashLookup()
    assert [cheat.naming(r["commits"], 3) for r in runs] == [None] * len(runs)
    for r in runs:
        with pytest.raises(ValueError):
            resolve(r["id"])  # the keyed id is in no public table
    public = _public_history(tasks)
    assert all(not set(r["stored"]) & set(public[r["task"]]) for r in runs)


def _public_history(tasks: list[str]) -> dict[str, list[str]]:
    from srelib.env.tasks.taskgen.tasks import task_history

    return {t: [c.sha for c in task_history(t).commits] for t in tasks}


def test_a_keyed_suite_replays_byte_for_byte_and_another_key_differs(keyed_runs):
    _, runs, again, other = keyed_runs
    assert runs == again
    for mine, theirs in zip(runs, other):
        assert {c["sha"] for c in mine["commits"]}.isdisjoint(c["sha"] for c in theirs["commits"])
        assert mine["id"] != theirs["id"]
    for r in runs:  # the oracle handoff's bad commit is a commit the keyed episode shows
        assert r["bad"] is None or r["bad"] in {c["sha"] for c in r["commits"]}


_PRIVATE_SHAPE = textwrap.dedent("""
    import dataclasses
    from srelib.env.tasks.taskgen.shape_lib.lru import SHAPE as _LRU

    SHAPE = dataclasses.replace(_LRU, name="lru_private", module="@n@_bounded.py")
    SPLIT = "heldout"
""")


def test_private_shapes_join_only_a_keyed_suite(tmp_path):
    key = tmp_path / "lab.key"
    key.write_bytes(os.urandom(32))
    (tmp_path / "suite" / "shapes").mkdir(parents=True)
    (tmp_path / "suite" / "shapes" / "lru_private.py").write_text(_PRIVATE_SHAPE)
    code = ("import json; from srelib.env.tasks.taskgen import candidates, build_scenario;"
            "from srelib.env.tasks.taskgen.shape_lib import PUBLIC_SHAPES;"
            "ids = [t for t in candidates() if t.endswith('_lru_private')];"
            "print(json.dumps([len(ids), build_scenario(ids[0]).heldout,"
            " 'lru_private' in PUBLIC_SHAPES, 'lru' in PUBLIC_SHAPES]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SRELIB_CACHE": str(tmp_path / "cache"),
           "SRELIB_SUITE_KEY": str(key), "SRELIB_SUITE_DIR": str(tmp_path / "suite")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    count, heldout, private_public, lru_public = json.loads(run.stdout)
    assert count > 0 and heldout is True
    assert not private_public and lru_public  # the suite file counts its public-shape tasks apart
    from srelib.env.tasks.taskgen import candidates

    assert not [t for t in candidates() if t.endswith("_lru_private")]  # not in the public suite


def test_the_suite_file_counts_the_tasks_whose_shape_is_public():
    """A keyed suite of public shapes still shows public code (E2 of the issue 45 red team: the
    public bad() text names the bad commit in 1.00): the suite file says how many tasks per
    split have a public shape, every one on the public suite."""
    from srelib.analysis.suite_build import public_shape_tasks
    from srelib.env.tasks.taskgen.suite import suite_file

    raw = json.loads(suite_file().read_text())
    tasks = generated_suite().tasks
    counts = public_shape_tasks(tasks)
    assert raw["public_shape_tasks"] == counts
    assert counts == {split: sum(i.split == split for i in tasks.values()) for split in ("train", "heldout")}


def test_tasks_build_refuses_a_bad_key_or_shapes_without_one(tmp_path):
    from srelib.commands.tasks import cmd_tasks_build

    short = tmp_path / "short.key"
    short.write_bytes(b"too short")
    with pytest.raises(ValueError, match="at least 16"):
        cmd_tasks_build(Namespace(key=str(short), shapes=None, out=None))
    with pytest.raises(ValueError, match="cannot be read"):
        cmd_tasks_build(Namespace(key=str(tmp_path / "missing.key"), shapes=None, out=None))
    with pytest.raises(ValueError, match="give --key"):
        cmd_tasks_build(Namespace(key=None, shapes=str(tmp_path), out=None))
