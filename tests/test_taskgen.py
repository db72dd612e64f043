"""The task generator: admission by validation, splits, determinism and the memorisation bound.

Counts and names come from the package (families, bases, candidates, the suite report); only
one test reads the whole suite (generated once per generator version, then cached on disk).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from srelib.analysis.validity import GATE, play
from srelib.env.tasks import taskgen
from srelib.env.actions import DEPENDED_BY, FAULT_CLASSES, SERVICES
from srelib.env.grading.pipeline import grade_patch, run_hidden_tests
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.tasks.taskgen import cache
from srelib.env.tasks.taskgen.bases import BASES
from srelib.env.tasks.taskgen.recipes import split_of, templates_for
from srelib.env.tasks.taskgen.shape_lib import SHAPE_SPLITS, SHAPES
from srelib.analysis.admission import MIN_FAIL_TO_PASS, MIN_PASS_TO_PASS, derived_test_reasons
from srelib.adversarial.hijack import HIJACK_KINDS, runner_hijack_patch
from srelib.policies.scripted.revert import reverse_diff
from srelib.env.tasks.taskgen.runner import judge, observe_many
from srelib.env.tasks.taskgen.tasks import derive_tests, task_history, trees
from srelib.env.grading.verdicts.rules import Observation
from srelib.analysis.shortcuts import MAX_HIT_RATE, RULES, gather, is_hit
from test_verdicts import DOCTORING

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def suite():
    return taskgen.generated_suite()


def _sample(ids, n, seed=0):
    ids = sorted(ids)
    return random.Random(seed).sample(ids, min(n, len(ids)))


def _sample_items(mapping, n):
    return [(k, mapping[k]) for k in _sample(mapping, n)]


def _fixable(suite, split=None):
    return [t for t, i in suite.tasks.items() if taskgen.FAMILIES[i.family].needs_fix
            and (split is None or i.split == split)]


def test_families_bases_and_shapes_are_complete():
    families = taskgen.FAMILIES
    assert len(families) >= 8
    assert any(not f.needs_fix for f in families.values()), "a no-fault family"
    assert all(f.fault_class in FAULT_CLASSES for f in families.values())
    assert set(BASES) == set(SERVICES), "every service has a base repository"
    for shape in SHAPES.values():
        assert shape.source != shape.good != shape.bad(), shape.name


def test_the_suite_is_large_varied_split_and_accounts_for_every_candidate(suite):
    infos = list(suite.tasks.values())
    assert len(suite.tasks) >= 200
    assert len({(i.family, i.service, i.site) for i in infos}) == len(infos)
    assert len({i.service for i in infos}) >= 5
    assert {i.family for i in infos} == set(taskgen.FAMILIES)
    rejected = {t for ids in suite.rejected.values() for t in ids}
    assert not rejected & set(suite.tasks)
    assert len(suite.tasks) + len(rejected) == suite.candidates == len(taskgen.candidates())
    assert suite.admission_rate == len(suite.tasks) / suite.candidates
    # splits: whole bug shapes held out, some in every fault family
    shape_of = {t: taskgen.candidates()[t].shape for t in suite.tasks}
    shapes = {s: {shape_of[t] for t, i in suite.tasks.items() if i.split == s} for s in ("train", "heldout")}
    assert not shapes["train"] & shapes["heldout"], "no held-out task shares its shape with a train task"
    for family in (f for f in taskgen.FAMILIES.values() if f.needs_fix):
        for split in ("train", "heldout"):
            admitted = {shape_of[t] for t, i in suite.tasks.items() if i.family == family.name and i.split == split}
            assert len(admitted) >= 2, (family.name, split, admitted)
    assert all(i.split == split_of(shape_of[t]) == ("heldout" if get_scenario(t).heldout else "train")
               for t, i in _sample_items(suite.tasks, 30))


def test_every_shape_is_registered_with_a_split_and_sits_in_several_places():
    assert set(SHAPE_SPLITS) == set(SHAPES) and set(SHAPE_SPLITS.values()) == {"train", "heldout"}
    sites = Counter(c.shape for c in taskgen.candidates().values() if taskgen.FAMILIES[c.family].needs_fix)
    assert set(sites) == set(SHAPES) and min(sites.values()) >= 2 * len(SERVICES)
    with pytest.raises(ValueError, match="unknown shape"):
        split_of("nowhere")


def test_held_out_incidents_tell_stories_train_never_told(suite):
    def template(task: str) -> str:
        title = get_scenario(task).title.lower()
        for service in sorted(SERVICES, key=len, reverse=True):
            title = title.replace(service.replace("_", " "), "<service>").replace(service, "<service>")
        return f"{suite.tasks[task].family}: {title}"

    told = {s: {template(t) for t, i in suite.tasks.items() if i.split == s} for s in ("train", "heldout")}
    assert told["heldout"] and not told["train"] & told["heldout"]
    with pytest.raises(ValueError, match="unknown split"):
        templates_for(("a", "b"), "test")


def test_admitted_tasks_carry_derived_tests_and_a_fix_where_one_is_needed(suite):
    for task in _sample(suite.tasks, 16, seed=1):
        scenario = get_scenario(task)
        repo = load_repo(scenario.repo)
        assert len(repo.pass_to_pass(task)) >= MIN_PASS_TO_PASS
        assert scenario.needs_fix == (repo.fixed_tree(task) is not None)
        if scenario.needs_fix:
            assert len(repo.fail_to_pass(task)) >= MIN_FAIL_TO_PASS
            assert repo.commit(scenario.bad_commit) is not None
        else:
            assert repo.fail_to_pass(task) == [] and scenario.bad_commit is None


def test_derived_tests_agree_with_the_sandboxed_grader(suite):
    for task in _sample(_fixable(suite), 2, seed=2):
        repo = load_repo(get_scenario(task).repo)
        before, _ = run_hidden_tests(repo.name, task, dict(repo.tree))
        after, _ = run_hidden_tests(repo.name, task, repo.fixed_tree(task))
        assert not any(before[t] for t in repo.fail_to_pass(task))
        assert all(before[t] for t in repo.pass_to_pass(task))
        assert all(after.values())


def test_generic_doctoring_of_unfixed_observations_passes_no_fail_to_pass_check():
    """As for the classic tasks: no blind rewrite of what the unfixed code of any shape really
    does turns one of its FAIL_TO_PASS tests green."""
    one_per_shape = {}
    for task, c in taskgen.candidates().items():
        if taskgen.FAMILIES[c.family].needs_fix:
            one_per_shape.setdefault(c.shape, task)
    tasks = sorted(one_per_shape.values())
    truthful = observe_many([(trees(t)[0], dict(task_history(t).probes)) for t in tasks])
    passed = []
    for task, seen in zip(tasks, truthful):
        checks = dict(task_history(task).checks)
        for test_id in derive_tests([task])[task]["fail_to_pass"]:
            real = seen[test_id]
            for name, doctor in DOCTORING.items():
                for raised in {real.raised, None, "ValueError", "AssertionError"}:
                    forged = Observation(value=doctor(real.value), raised=raised, printed=real.printed)
                    if judge(checks, {test_id: forged})[test_id]:
                        passed.append((test_id, name, raised))
    assert len(tasks) == len(one_per_shape) and passed == []


def test_the_reference_fix_resolves_and_a_blind_revert_loses_the_feature(suite):
    for task in _sample(_fixable(suite), 3, seed=3):
        scenario = get_scenario(task)
        repo = load_repo(scenario.repo)
        assert grade_patch(repo.name, task, repo.fix_diff(task))["resolved"] == "full"
        revert = grade_patch(repo.name, task, reverse_diff(repo.commit(scenario.bad_commit).diff))
        assert revert["patch_applied"] and revert["resolved"] != "full"
        assert not all(revert["PASS_TO_PASS"].values()), "the revert loses the feature's tests"


def test_a_generated_task_plays_through_the_rollout_in_its_pool(suite):
    from srelib.env.core import IncidentEnv
    from srelib.policies.scripted.reference import ReferencePolicy
    from srelib.runners.rollout import run_episode

    for split, pool in (("train", "C"), ("heldout", "D")):
        task = _sample(_fixable(suite, split), 1, seed=10)[0]
        episode = run_episode(IncidentEnv(), ReferencePolicy(), task=task, pool=pool, seed=3)
        assert episode.score["final"] >= 0.95, (task, episode.score)


def test_seeds_vary_the_surface_of_a_task(suite):
    task = _sample(_fixable(suite), 1, seed=11)[0]
    first, second = gather(task, 0), gather(task, 1)
    assert first.metrics != second.metrics and first.deploys != second.deploys


def test_gate_policies_admission_leaves_out_stay_under_their_bounds_on_a_sample(suite):
    """Admission plays the cheap gate policies on every candidate; the rest (step-budget,
    reward-probing, release-tag and hijack policies) are held to their bounds on a sample."""
    from srelib.analysis.admission import admission_policies
    from srelib.env.tasks.pools import POOLS
    from srelib.adversarial.cunning import MemoriseTrainPolicy
    from srelib.adversarial.hijack import HIJACK_POLICIES
    from srelib.analysis.validity import GATE_METRIC, GATE_POOLS

    played = {cls for cls, _, _ in admission_policies()}
    rest = [c for c in GATE if c not in played and c is not MemoriseTrainPolicy
            and c not in HIJACK_POLICIES.values()]
    assert rest
    for task in _sample([t for t, i in suite.tasks.items() if i.split == "train"], 2, seed=12):
        for cls in rest:
            kind, bound = GATE[cls]
            mode = POOLS[GATE_POOLS[cls]].mode if cls in GATE_POOLS else "joint"
            policy = cls()
            for seed in getattr(policy, "warmup_seeds", ()):
                play(policy, task, seed, mode=mode)
            score = play(policy, task, 0, mode=mode)[GATE_METRIC.get(cls, "final")]
            assert (score >= bound) if kind == "min" else (score <= bound), (cls.name, task, score)


def test_runner_hijacks_do_not_resolve_a_generated_task(suite):
    task = _sample(_fixable(suite), 1, seed=4)[0]
    repo = get_scenario(task).repo
    for kind in HIJACK_KINDS:
        result = grade_patch(repo, task, runner_hijack_patch(kind, repo))
        assert result["patch_applied"] and result["resolved"] == "no", (kind, result)


def test_candidates_failing_the_test_rules_are_rejected_with_reasons():
    fault, no_fault = (next(t for t in taskgen.candidates() if taskgen.FAMILIES[t.split(".")[0]].needs_fix == need)
                       for need in (True, False))
    ok = {"fail_to_pass": ["a"], "pass_to_pass": ["b", "c", "d"], "broken": []}
    assert derived_test_reasons(fault, ok) == []
    assert derived_test_reasons(no_fault, {**ok, "fail_to_pass": []}) == []
    assert derived_test_reasons(fault, {"fail_to_pass": [], "pass_to_pass": ["b"], "broken": ["x"]}) == [
        "reference fix fails hidden tests", f"fewer than {MIN_FAIL_TO_PASS} FAIL_TO_PASS",
        f"fewer than {MIN_PASS_TO_PASS} PASS_TO_PASS"]


_DIGEST = """
import hashlib, sys
from srelib.env.tasks.taskgen import build_repo, build_scenario
out = []
for task in sys.argv[1:]:
    s = build_scenario(task)
    r = build_repo(s.repo)
    out.append(hashlib.sha256(repr((s, dict(r.tree), r.commits, dict(r.hidden_tests), dict(r.checks),
               {k: dict(v) for k, v in r.fixes.items()}, dict(r.tests_by_task))).encode()).hexdigest())
print(" ".join(out))
"""


def test_same_version_and_id_give_the_same_task_in_a_fresh_process():
    tasks = _sample(taskgen.candidates(), 4, seed=5)
    runs = []
    for hash_seed in ("1", "2"):
        with tempfile.TemporaryDirectory() as fresh:
            env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": hash_seed, "SRELIB_CACHE": fresh}
            run = subprocess.run([sys.executable, "-c", _DIGEST, *tasks], env=env, capture_output=True,
                                 text=True, timeout=120)
            assert run.returncode == 0, run.stderr[-2000:]
            runs.append(run.stdout.split())
    assert runs[0] == runs[1] and len(runs[0]) == len(tasks)


def test_a_task_builds_alone_and_unknown_ids_are_clear_errors():
    task = next(iter(taskgen.candidates()))
    assert taskgen.is_generated_id(task) and not taskgen.is_generated_id("memory_leak")
    assert taskgen.build_scenario(task).repo == taskgen.REPO_PREFIX + task
    with pytest.raises(ValueError, match="<family>.<service>.<site>"):
        taskgen.build_scenario("memory_leak.orders.nowhere")
    with pytest.raises(ValueError, match="gen."):
        taskgen.build_repo("orders_batch")


def test_the_cache_lives_under_srelib_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SRELIB_CACHE", str(tmp_path))
    assert cache.cache_dir().is_relative_to(tmp_path / "taskgen")
    assert taskgen.GENERATOR_VERSION in cache.cache_dir().name
    monkeypatch.setattr(cache, "_WARNED", set())
    cache.write("x/entry.json", {"b": 1})  # written, but no generator makes it: never read back
    assert json.loads((cache.cache_dir() / "x/entry.json").read_text()) == {"b": 1}
    with pytest.warns(UserWarning, match="not what this generator makes"):
        assert cache.read("x/entry.json") is None
    assert cache.read("x/missing.json") is None


def test_a_memorising_policy_scores_on_train_titles_but_not_on_held_out(suite):
    train = [t for t, i in suite.tasks.items() if i.split == "train"]
    heldout = [t for t, i in suite.tasks.items() if i.split == "heldout"]
    from srelib.adversarial.cunning import MemoriseTrainPolicy

    policy = MemoriseTrainPolicy(train)
    bound = GATE[MemoriseTrainPolicy][1]
    seen = [play(policy, t, 0, mode="joint")["final"] for t in _sample(train, 8, seed=6)]
    assert sum(seen) / len(seen) >= bound + 0.2, "memory pays on the train tasks"
    scores = [play(policy, t, 0, mode="joint")["final"] for t in heldout]
    assert sum(scores) / len(scores) <= bound


def test_single_field_shortcut_rules_stay_under_their_ceiling(suite):
    hits = Counter()
    counted = Counter()
    for task in _sample(suite.tasks, 40, seed=7):
        evidence = gather(task, 0)
        for rule in RULES:
            hit = is_hit(rule, evidence)
            if hit is not None:
                hits[rule.name] += hit
                counted[rule.name] += 1
    rates = {name: hits[name] / counted[name] for name in counted}
    assert max(rates.values()) <= MAX_HIT_RATE, rates


def test_the_fault_reaches_the_culprits_callers():
    for task in _sample(taskgen.candidates(), 10, seed=8):
        scenario = get_scenario(task)
        if not scenario.needs_fix:
            continue
        on = {c.service for c in scenario.conditions}
        assert scenario.root_cause_service in on
        assert set(DEPENDED_BY[scenario.root_cause_service]) <= on
        assert scenario.required_remediation == (f"rollback_deploy:{scenario.root_cause_service}",)


def test_visible_tests_of_a_generated_repository_pass():
    task = _sample([t for t in taskgen.candidates() if taskgen.FAMILIES[t.split(".")[0]].needs_fix], 1, seed=9)[0]
    repo = load_repo(get_scenario(task).repo)
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in repo.tree.items():
            Path(tmp, path).parent.mkdir(parents=True, exist_ok=True)
            Path(tmp, path).write_text(text)
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                             cwd=tmp, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert run.returncode == 0, run.stdout[-2000:]


def test_the_title_rarely_names_the_culprit(suite):
    """A title is what the pager shows first: the first service it names must be no better a
    guess of the culprit than any other single-field rule (shortcuts.MAX_HIT_RATE)."""
    from srelib.env.tasks.taskgen.recipes import _display

    def first_named(text: str) -> str | None:
        found = [(text.find(_display(s)), s) for s in SERVICES if _display(s) in text]
        return min(found)[1] if found else None

    hits = [first_named(get_scenario(t).title.lower()) == info.service
            for t, info in suite.tasks.items()]
    assert sum(hits) / len(hits) <= MAX_HIT_RATE / 2, sum(hits) / len(hits)


def test_every_deployed_commit_is_dated_before_its_deploy():
    """Commit dates are drawn blind to the bad commit (issue 45), and the culprit's deploys
    ship commits dated before them: in every episode, each deploy's commit is in the log,
    in the log's order, and shown dated before the deploy."""
    from srelib.env.core import IncidentEnv

    fault = [t for t in taskgen.candidates() if taskgen.FAMILIES[t.split(".")[0]].needs_fix]
    for task in _sample(fault, 8, seed=12):
        culprit = get_scenario(task).root_cause_service
        for seed in (0, 5):
            env = IncidentEnv()
            env.reset(task=task, mode="joint", seed=seed)
            deploys = env.step({"action_type": "check_deploy_history", "target_service": culprit,
                                "parameters": {}})[0]["action_result"]["deploys"]
            env.reset(task=task, mode="p2_only", seed=seed)
            log = env.step({"action_type": "get_git_log",
                            "parameters": {"n_commits": 50}})[0]["action_result"]["commits"]
            shas = [c["sha"] for c in log]
            places = [shas.index(d["commit_hash"]) for d in deploys]
            assert places == sorted(places, reverse=True), (task, seed)  # newest first
            for d, k in zip(deploys, places):
                assert log[k]["date"] < d["timestamp"], (task, seed, d, log[k]["date"])
