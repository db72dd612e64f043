"""The phase-2 workspace: useful, deterministic answers, and no way out of the repository."""

from __future__ import annotations

import dataclasses
import time

import pytest

from srelib.env.tasks.lookup import load_repo
from srelib.env.phase2.workspace import MAX_LIST_ENTRIES, Workspace


@pytest.fixture(scope="module")
def ws():
    return Workspace(load_repo("orders_batch"))


def test_list_dir_is_sorted_and_typed(ws):
    ok, result, _ = ws.execute("list_dir", {"path": "."})
    assert ok and [e["name"] for e in result["entries"]] == ["README.md", "docs", "orders", "tests"]
    assert {e["name"]: e["type"] for e in result["entries"]}["orders"] == "dir"
    ok, result, _ = ws.execute("list_dir", {"path": "orders/handlers/"})
    assert ok and [e["name"] for e in result["entries"]] == ["__init__.py", "batch.py", "single.py"]
    assert result["entries"][1]["size"] == len(ws.repo.tree["orders/handlers/batch.py"].encode())
    assert not result["truncated"] and result["count"] <= MAX_LIST_ENTRIES


def test_read_file_with_and_without_a_line_range(ws):
    text = ws.repo.tree["orders/models.py"]
    ok, result, _ = ws.execute("read_file", {"path": "orders/models.py"})
    assert ok and result["content"] == text and not result["truncated"]
    ok, result, _ = ws.execute("read_file", {"path": "./orders/models.py", "start_line": 9, "end_line": 10})
    assert ok and result["content"] == "".join(text.splitlines(keepends=True)[8:10])
    ok, result, _ = ws.execute("read_file", {"path": "orders/models.py", "start_line": 500})
    assert not ok and "past the end" in result["error"]
    ok, result, _ = ws.execute("read_file", {"path": "orders/models.py", "start_line": 5, "end_line": 2})
    assert not ok


def test_search_literal_regex_and_glob(ws):
    ok, result, _ = ws.execute("search_code", {"query": "_cache"})
    assert ok and result["hits"] and all(h["path"] == "orders/handlers/batch.py" for h in result["hits"])
    assert [h["line"] for h in result["hits"]] == sorted(h["line"] for h in result["hits"])
    ok, result, _ = ws.execute("search_code", {"query": r"def (submit|flush)\b", "regex": True})
    assert ok and {h["text"].split("(")[0] for h in result["hits"]} == {"def submit", "def flush"}
    ok, result, _ = ws.execute("search_code", {"query": "Order", "path_glob": "tests/*"})
    assert ok and result["hits"] and all(h["path"].startswith("tests/") for h in result["hits"])
    ok, result, _ = ws.execute("search_code", {"query": "import", "max_hits": 2})
    assert ok and result["count"] == 2 and result["truncated"]


def test_git_log_filters_by_path_and_count(ws):
    ok, result, _ = ws.execute("get_git_log", {})
    assert ok and [c["sha"] for c in result["commits"]] == ["eb44b02", "fdef408", "e07b3a8", "6c2d0e5",
                                                             "7a1f4c2", "a3f7c91", "d3ec46b", "31aa72c",
                                                             "0e1d8b2"]
    ok, result, _ = ws.execute("get_git_log", {"path": "orders/notifier.py"})
    assert ok and [c["sha"] for c in result["commits"]] == ["31aa72c"]
    ok, result, _ = ws.execute("get_git_log", {"n_commits": 1})
    assert ok and result["count"] == 1 and result["truncated"]


def test_file_diff_by_prefix_and_path(ws):
    ok, result, _ = ws.execute("get_file_diff", {"commit_sha": "A3F7"})
    assert ok and result["commit_sha"] == "a3f7c91" and "+class BatchProcessor" in result["diff"]
    ok, result, _ = ws.execute("get_file_diff", {"commit_sha": "a3f7c91", "path": "orders/__init__.py"})
    assert ok and result["diff"].count("diff --git") == 1 and "2.3.1" in result["diff"]
    ok, result, _ = ws.execute("get_file_diff", {"commit_sha": "ffffff"})
    assert not ok


def test_terminal_actions_are_acknowledged_for_the_environment(ws):
    assert ws.execute("propose_patch", {"diff": ""})[0]
    assert ws.execute("declare_no_change", {"reason": None})[0]
    assert not ws.execute("propose_patch", {"diff": None})[0]


SECRET = load_repo("orders_batch").hidden_tests["test_batch_cache.py"][:60]

ATTACKS = [
    ("read_file", {"path": "../manifest.json"}),
    ("read_file", {"path": "orders/../../hidden_tests/test_batch_cache.py"}),
    ("read_file", {"path": "/etc/passwd"}),
    ("read_file", {"path": "//etc/passwd"}),
    ("read_file", {"path": "~/.ssh/id_rsa"}),
    ("read_file", {"path": "..\\..\\manifest.json"}),
    ("read_file", {"path": "orders/models.py\x00.txt"}),
    ("read_file", {"path": "orders/mode\u200bls.py"}),
    ("read_file", {"path": "orders/\u202emodels.py"}),
    ("read_file", {"path": "orders/mo\u0301dels.py"}),
    ("read_file", {"path": "\uff0e\uff0e/manifest.json"}),
    ("read_file", {"path": "orders/" + "a" * 300}),
    ("read_file", {"path": "/".join(["d"] * 40)}),
    ("read_file", {"path": ".git/config"}),
    ("read_file", {"path": "hidden_tests/test_batch_cache.py"}),
    ("read_file", {"path": "fix/memory_leak/orders/handlers/batch.py"}),
    ("read_file", {"path": "orders/models.py -> /etc/passwd"}),
    ("read_file", {"path": "/proc/self/environ"}),
    ("read_file", {"path": "orders\nmodels.py"}),
    ("read_file", {"path": ["orders/models.py"]}),
    ("list_dir", {"path": ".."}),
    ("list_dir", {"path": "/"}),
    ("list_dir", {"path": "orders/models.py"}),
    ("search_code", {"query": "(a)\\1", "regex": True}),
    ("search_code", {"query": "(?=a)b", "regex": True}),
    ("search_code", {"query": "(?<!a)b", "regex": True}),
    ("search_code", {"query": "(?P<x>a)(?P=x)", "regex": True}),
    ("search_code", {"query": "[unclosed", "regex": True}),
    ("search_code", {"query": "(.{0,1000}){1000}", "regex": True}),
    ("search_code", {"query": "x", "path_glob": "../*"}),
    ("search_code", {"query": ""}),
    ("search_code", {"query": "x", "regex": "yes"}),
    ("search_code", {"query": "x", "max_hits": 10**9}),
    ("get_git_log", {"path": "../../etc"}),
    ("get_git_log", {"n_commits": "all"}),
    ("get_file_diff", {"commit_sha": "../../fix"}),
    ("get_file_diff", {"commit_sha": "a3f7c91", "path": "../manifest.json"}),
    ("get_file_diff", {"commit_sha": "a3"}),
    ("read_file", "not a dict"),
    ("rm_rf", {"path": "."}),
    (None, {}),
]


@pytest.mark.parametrize("action,params", ATTACKS, ids=[f"{i}-{a}" for i, (a, _) in enumerate(ATTACKS)])
def test_escape_attempts_get_an_error_result_never_an_exception(ws, action, params):
    started = time.perf_counter()
    ok, result, message = ws.execute(action, params)
    assert time.perf_counter() - started < 1.0
    assert not ok and set(result) == {"error"} and result["error"] and message
    assert SECRET not in repr(result)


def test_at_least_twenty_attack_vectors():
    assert len(ATTACKS) >= 20


@pytest.fixture(scope="module")
def big():
    """orders_batch plus 5,000 lines of 240 'a's, and one line of a million 'a's."""
    repo = load_repo("orders_batch")
    tree = {**repo.tree, "big/lines.py": ("a" * 240 + "\n") * 5000, "big/one_line.py": "a" * 10**6}
    return Workspace(dataclasses.replace(repo, tree=tree))


REDOS = [
    "[^Q]{0,50}" * 7 + "Q",  # bounded repeats in a row: blocked step for minutes on `re`
    "([^Q]{0,50}){7}Q",
    "(a+)+$b",
    "(a|aa)*b",
    "(a|a)*Q",
    ".*.*.*.*.*.*=Q",
    "(\\w|\\d){0,1000}Q",  # a large program: the costliest kind of line for RE2
    "((\\w|\\d){0,30}){0,30}Q",
    "(?i)(a|b|c|d|e|f)*[^a]{0,99}Q",
    "(x+x+)+y",
]


@pytest.mark.parametrize("query", REDOS)
def test_catastrophic_regexes_run_in_bounded_time(big, query):
    started = time.perf_counter()
    ok, result, _ = big.execute("search_code", {"query": query, "regex": True, "path_glob": "big/*"})
    assert time.perf_counter() - started < 1.0
    assert ok and result["hits"] == []


def test_regex_search_still_finds_lines_and_reports_truncation(big):
    ok, result, _ = big.execute("search_code", {"query": "a{3}$", "regex": True, "path_glob": "*.py",
                                                "max_hits": 100})
    assert ok and result["count"] == 100 and result["truncated"]
    assert {h["path"] for h in result["hits"]} == {"big/lines.py"}
    ok, result, _ = big.execute("search_code", {"query": r"def (submit|flush)\b", "regex": True})
    assert ok and result["count"] >= 1


def test_the_workspace_takes_the_declared_defaults_and_bounds(big):
    from srelib.env.actions import ACTION_SPECS, ActionType

    max_hits = ACTION_SPECS[ActionType.SEARCH_CODE].params["max_hits"]
    query = {"query": "aaa", "path_glob": "big/lines.py"}
    ok, result, _ = big.execute("search_code", query)
    assert ok and result["count"] == max_hits.default and result["truncated"]
    ok, result, _ = big.execute("search_code", {**query, "max_hits": max_hits.maximum})
    assert ok and result["count"] == max_hits.maximum
    ok, result, _ = big.execute("search_code", {**query, "max_hits": max_hits.maximum + 1})
    assert not ok and result["error"] == f"parameters.max_hits must be between 1 and {max_hits.maximum}"


def test_unsupported_regex_features_get_a_clear_error(ws):
    for query in ("(a)\\1", "(?=x)y", "(?<=x)y"):
        ok, result, _ = ws.execute("search_code", {"query": query, "regex": True})
        assert not ok and "no backreferences or lookaround" in result["error"]


def test_results_are_deterministic(ws):
    calls = [("list_dir", {}), ("search_code", {"query": "def "}), ("get_git_log", {})]
    assert [ws.execute(a, p) for a, p in calls] == [Workspace(ws.repo).execute(a, p) for a, p in calls]


@pytest.mark.parametrize("glob", ["*a" * 49 + "b", "?" * 99 + "b", "[!a]*" * 20])
def test_hostile_path_globs_run_in_bounded_time(glob):
    repo = load_repo("orders_batch")
    tree = {**repo.tree, **{f"d{i}/" + "a" * 90 + ".py": "x\n" for i in range(2000)}}
    many = Workspace(dataclasses.replace(repo, tree=tree))
    started = time.perf_counter()
    ok, result, _ = many.execute("search_code", {"query": "x", "path_glob": glob})
    assert ok and result["hits"] == [] and time.perf_counter() - started < 1.0
