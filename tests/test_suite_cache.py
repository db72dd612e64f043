"""The generated-suite cache is verified, not trusted: an entry is used only if this user alone
may write it and its digest is the packaged one; otherwise it is regenerated, with a warning,
and a tampered cache changes no grade and no split. The suite itself is read from the packaged
file only, and a stale or edited file is refused."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from srelib.env.tasks import lookup
from srelib.env.grading.pipeline import grade_patch
from srelib.env.phase2.repos import unified_diff
from srelib.env.tasks.taskgen import cache, suite
from srelib.env.tasks.taskgen.tasks import derive_tests, trees

TASK = "memory_leak.orders.cart_lru"
ENTRY = f"tests/{TASK}.json"


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """A fresh cache under ``tmp_path`` holding ``TASK``'s derived tests: ``(path, entry)``."""
    monkeypatch.setenv("SRELIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_WARNED", set())
    monkeypatch.setattr(cache, "_DERIVING", [True])  # derived here, not taken from the package
    entry = derive_tests([TASK])[TASK]
    monkeypatch.setattr(cache, "_DERIVING", [])
    return cache.cache_dir() / ENTRY, entry


def test_the_packaged_digests_are_this_generators(cached):
    """Run ``python -m srelib.analysis.suite_build`` when the generator changes; what it generates here
    must be what the digests say, or the cache would never be used."""
    assert cache._packaged() is not None, f"{cache.DIGEST_FILE} is for another generator"
    assert hashlib.sha256(cache._WRITTEN[ENTRY].encode()).hexdigest() == cache._packaged()[ENTRY]
    assert cache.read(ENTRY) == cached[1]


def test_an_entry_missing_from_the_cache_is_the_shipped_one_and_a_forged_one_is_not(cached,
                                                                                    monkeypatch):
    """A fresh machine reads the entries the package ships, checked against the packaged
    digests: one edited in the shipped file is not used."""
    path, entry = cached
    path.unlink()
    assert cache.read(ENTRY) == entry
    shipped = json.loads(cache.ENTRIES_FILE.read_text(encoding="utf-8"))
    shipped["entries"][ENTRY] = {**entry, "fail_to_pass": entry["pass_to_pass"][:1]}
    forged = path.parent.parent / "forged_entries.json"
    forged.write_text(json.dumps(shipped), encoding="utf-8")
    monkeypatch.setattr(cache, "ENTRIES_FILE", forged)
    cache._shipped.cache_clear()
    try:
        assert cache.read(ENTRY) is None
    finally:
        cache._shipped.cache_clear()


def _comment_only_patch() -> str:
    tree = trees(TASK)[0]
    source = next(p for p in sorted(tree) if p.endswith(".py") and "test" not in p)
    return unified_diff(tree, {**tree, source: tree[source] + "# looked into it\n"})


def test_tampered_tests_are_regenerated_and_a_comment_only_patch_still_scores_nothing(cached):
    path, entry = cached
    assert entry["fail_to_pass"] and entry["pass_to_pass"]
    forged = {**entry, "fail_to_pass": entry["pass_to_pass"][:1], "pass_to_pass": entry["pass_to_pass"][1:]}
    path.write_text(json.dumps(forged, sort_keys=True))
    with pytest.warns(UserWarning, match="not what this generator makes"):
        assert cache.read(ENTRY) is None
    lookup.load_repo.cache_clear()
    try:
        result = grade_patch(f"gen.{TASK}", TASK, _comment_only_patch())
    finally:
        lookup.load_repo.cache_clear()
    assert result["patch_applied"] and result["resolved"] == "no"
    assert sorted(result["FAIL_TO_PASS"]) == sorted(entry["fail_to_pass"])
    assert json.loads(path.read_text()) == entry, "the entry is rebuilt"


@pytest.mark.parametrize("body, why", [(None, "cannot be read"),
                                       ({"generator": "0-stale"}, "generator '0-stale', not")],
                         ids=["missing", "another generator's"])
def test_a_missing_or_stale_suite_file_is_refused_naming_the_rebuild(tmp_path, monkeypatch, body, why):
    """The environment never admits tasks itself: without this generator's file it says how to
    build one."""
    path = tmp_path / "suite.json"
    if body is not None:
        path.write_text(json.dumps(body))
    monkeypatch.setattr(suite, "SUITE_FILE", path)
    monkeypatch.setattr(suite, "_MEMO", [])
    with pytest.raises(ValueError, match=why) as refused:
        suite.generated_suite()
    assert suite.REBUILD in str(refused.value)


def _owned_by_another_user(path: Path) -> None:
    os.chown(path, 65534, 65534)


@pytest.mark.parametrize("spoil, why", [
    (lambda path: _owned_by_another_user(path), "belongs to uid 65534"),
    (lambda path: _owned_by_another_user(cache._root()), "belongs to uid 65534"),
    (lambda path: os.chmod(path.parent, 0o775), "others may write it"),
    (lambda path: os.chmod(cache._root(), 0o757), "others may write it"),
    (lambda path: (path.rename(path.with_name("real.json")), path.symlink_to("real.json")),
     "symbolic link"),
], ids=["entry of another user", "cache of another user", "group-writable folder",
        "world-writable root", "symlinked entry"])
def test_a_cache_another_user_could_have_written_is_refused(cached, spoil, why):
    path, _ = cached
    if "uid" in why and os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    spoil(path)
    with pytest.warns(UserWarning, match=why):
        assert cache.read(ENTRY) is None


def test_the_cache_is_created_private(cached):
    path, _ = cached
    for place in (path, *path.parents[:3]):
        assert place.stat().st_uid == os.geteuid() and not place.stat().st_mode & 0o022, place


def test_the_packaged_suite_file_is_the_suite_and_a_hand_edit_is_refused(tmp_path, monkeypatch):
    """The suite is an artefact: ``suite.json`` in the package holds the cards; editing a card
    without regenerating breaks its digest."""
    from srelib.analysis import suite_build

    body = json.loads(suite.SUITE_FILE.read_text())
    assert (body["generator"], body["gate"]) == (cache.generator_key(), suite_build.gate_key()), \
        f"run {suite.REBUILD}"
    monkeypatch.setattr(suite, "_MEMO", [])
    report = suite.generated_suite()
    assert sorted(report.tasks) == sorted(body["tasks"]) and report.tells == body["tells"]
    task, card = next(iter(body["tasks"].items()))
    assert set(card) == {"family", "culprit", "shape", "site", "bad_commit", "split"}
    assert card == suite_build.card(task, report.tasks[task])
    edited = dict(body, tasks={**body["tasks"], task: {**card, "split": "train" if card["split"] == "heldout" else "heldout"}})
    forged = tmp_path / "suite.json"
    forged.write_text(json.dumps(edited))
    monkeypatch.setattr(suite, "SUITE_FILE", forged)
    with pytest.raises(ValueError, match="do not match its digest"):
        suite._packaged()
