"""Patch grading: tolerant normalisation, real git/patch application, hidden tests in a real
sandboxed subprocess, memoisation, and hostile patches that gain nothing."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest

from srelib.env.grading import pipeline as patching
from srelib.env.grading.sandbox import isolate as sandbox
from srelib.env.grading.pipeline import grade_patch, normalise_diff
from srelib.env.tasks.lookup import load_repo
from srelib.env.phase2.repos import unified_diff
from srelib.env.simulation.scenarios import DATA_DIR

REPO, TASK = "orders_batch", "memory_leak"
BATCH = "orders/handlers/batch.py"
FIX_LINE = "            del self._cache[order.order_id]\n"
ANCHOR = "            self.notifier.order_placed(order)\n"


def _tree() -> dict[str, str]:
    return dict(load_repo(REPO).tree)


def _fix() -> str:
    return load_repo(REPO).fix_diff(TASK)


def _batch_diff(prelude: str = "", fixed: bool = True, flush_guard: str | None = None) -> str:
    """A diff of batch.py: optional code run at import, with or without the fix line.

    ``flush_guard`` makes the fix line run only when that expression is true at flush time.
    """
    tree = _tree()
    text = tree[BATCH]
    if fixed:
        line = FIX_LINE if flush_guard is None else (
            f"            if {flush_guard}:\n    " + FIX_LINE)
        text = text.replace(ANCHOR, ANCHOR + line)
    text = text.replace("from __future__ import annotations\n",
                        "from __future__ import annotations\n" + prelude, 1)
    return unified_diff(tree, {**tree, BATCH: text})


def test_reference_fix_resolves_and_an_empty_patch_does_not():
    good = grade_patch(REPO, TASK, _fix())
    assert good["patch_applied"] and good["resolved"] == "full" and not good["timed_out"]
    assert set(good) == {"patch_applied", "apply_error", "tests_touched", "FAIL_TO_PASS",
                         "PASS_TO_PASS", "resolved", "fail_to_pass_rate", "pass_to_pass_rate",
                         "site_unchanged", "timed_out", "isolation", "verified"}
    assert good["fail_to_pass_rate"] == good["pass_to_pass_rate"] == 1.0 and not good["site_unchanged"]
    assert good["verified"] and good["isolation"] in sandbox.HOLDING_LEVELS
    empty = grade_patch(REPO, TASK, "")
    assert not empty["patch_applied"] and empty["resolved"] == "no" and empty["apply_error"]
    assert not any(empty["FAIL_TO_PASS"].values())


def _variants() -> dict[str, str]:
    fix = _fix()
    lines = fix.splitlines()
    hunk = next(i for i, l in enumerate(lines) if l.startswith("@@"))
    shifted = lines[:hunk] + ["@@ -60,9 +60,10 @@"] + lines[hunk + 1:]
    no_prefix = [l.replace("--- a/", "--- ").replace("+++ b/", "+++ ") for l in lines]
    stripped_blank = [("" if l == " " else l) for l in lines]
    return {
        "crlf": fix.replace("\n", "\r\n"),
        "no final newline": fix.rstrip("\n"),
        "no a/ b/ prefixes": "\n".join(no_prefix) + "\n",
        "fenced with prose": "Here is the fix:\n\n```diff\n" + fix + "```\nThat should do it.",
        "wrong line numbers and counts": "\n".join(shifted) + "\n",
        "blank context lines": "\n".join(stripped_blank) + "\n",
        "only the --- +++ headers": "\n".join(l for l in lines if not l.startswith("diff --git")) + "\n",
    }


@pytest.mark.parametrize("kind", list(_variants()))
def test_normalisation_accepts_common_diff_shapes(kind):
    result = grade_patch(REPO, TASK, _variants()[kind])
    assert result["patch_applied"], result["apply_error"]
    assert result["resolved"] == "full"


def test_fuzzy_patch_fallback_applies_a_diff_with_stale_context(tmp_path):
    stale = _fix().replace("         return len(batch)\n", "         return len(batch)  # written\n", 1)
    assert stale != _fix()
    patching._write_tree(tmp_path, _tree())
    git = subprocess.run(["git", "apply", "--check", "-"], input=stale.encode(), capture_output=True,
                         cwd=tmp_path)
    assert git.returncode != 0, "the stale context must defeat git apply"
    result = grade_patch(REPO, TASK, stale)
    assert result["patch_applied"] and result["resolved"] == "full"


@pytest.mark.parametrize("diff,reason", [
    ("--- a/orders/nope.py\n+++ b/orders/nope.py\n@@ -1 +1 @@\n-x\n+y\n", "does not apply"),
    ("--- a/../escape.py\n+++ b/../escape.py\n@@ -0,0 +1 @@\n+x\n", "bad path"),
    ("--- a//etc/passwd\n+++ b//etc/passwd\n@@ -1 +1 @@\n-x\n+y\n", "bad path"),
    ("--- a/x.py\n+++ b/y.py\n@@ -1 +1 @@\n-x\n+y\n", "renames"),
    ("just some prose, no diff", "empty patch"),
    ("--- /dev/null\n+++ b/pathlib.py\n@@ -0,0 +1 @@\n+class Path: pass\n", "shadow"),
    (None, "must be a string"),
    ("--- a/orders/models.py\n+++ b/orders/models.py\n@@ -1 +1 @@\n-x\n+\ud800\n", "not valid text"),
    ("--- /dev/null\n+++ b/blob.txt\n@@ -0,0 +1 @@\n+" + "x" * patching.DIFF_CHARS + "\n", "characters long"),
])
def test_bad_diffs_are_reported_not_raised(diff, reason):
    result = grade_patch(REPO, TASK, diff)
    assert not result["patch_applied"] and reason in result["apply_error"]
    assert result["resolved"] == "no"


def test_the_longest_diff_graded_fits_the_sandbox():
    """At most 4 bytes a character: a fix beside the widest file a graded diff can add still
    reaches the probes whole (under the per-file limit, the quota, the runner's memory)."""
    lines = (patching.DIFF_CHARS - len(_fix()) - 100) // 102
    wide = f"--- /dev/null\n+++ b/blob.txt\n@@ -0,0 +1,{lines} @@\n" + ("+" + "\U0001F600" * 100 + "\n") * lines
    assert len(_fix() + wide) <= patching.DIFF_CHARS
    result = grade_patch(REPO, TASK, _fix() + wide)
    assert result["resolved"] == "full" and not result["timed_out"]


@pytest.mark.parametrize("extra,applies", [(0, True), (1, False)])
def test_a_patch_that_adds_more_files_than_graded_is_refused(extra, applies):
    """Each file takes a page of the sandbox's quota: a tree at the bound still grades, one
    over it is refused with a reason (it ran out of room, a silent no, before)."""
    adds = patching.TREE_FILES - len(_tree()) + extra
    many = "".join(f"--- /dev/null\n+++ b/many/d{i // 500}/f{i}.txt\n@@ -0,0 +1 @@\n+a\n" for i in range(adds))
    result = grade_patch(REPO, TASK, _fix() + many)
    assert result["patch_applied"] is applies and not result["timed_out"]
    assert result["resolved"] == ("full" if applies else "no")
    assert applies or f"at most {patching.TREE_FILES}" in result["apply_error"]


def test_a_patch_tool_that_outlasts_its_time_is_an_apply_error_not_a_crash(monkeypatch):
    monkeypatch.setattr(patching, "APPLY_TIMEOUT_S", 1e-6)
    result = grade_patch(REPO, TASK, _batch_diff(f"TIMED = {uuid.uuid4().int}\n"))
    assert result["patch_applied"] is False and result["resolved"] == "no"
    assert result["apply_error"] == "does not apply: git took over 1e-06 s"


def test_changes_to_test_files_are_dropped_and_reported():
    tree = _tree()
    without_tests = {p: t for p, t in tree.items() if not p.startswith("tests/")}
    only_tests = grade_patch(REPO, TASK, unified_diff(tree, without_tests))
    assert only_tests["tests_touched"] == ["tests/test_batch.py", "tests/test_single.py"]
    assert not only_tests["patch_applied"] and only_tests["resolved"] == "no"
    fixed = load_repo(REPO).fixed_tree(TASK)
    both = grade_patch(REPO, TASK, unified_diff(tree, {p: t for p, t in fixed.items()
                                                       if not p.startswith("tests/")}))
    assert both["patch_applied"] and both["resolved"] == "full" and len(both["tests_touched"]) == 2


def test_resolution_follows_swe_bench():
    tree = _tree()
    guard = "        if order.order_id not in self._cache:\n"
    result = grade_patch(REPO, TASK, _batch_diff(flush_guard="len(batch) == 1"))  # single-order flushes only
    assert result["patch_applied"] and result["resolved"] == "partial"
    assert 0 < sum(result["FAIL_TO_PASS"].values()) < len(result["FAIL_TO_PASS"])
    assert result["fail_to_pass_rate"] == round(sum(result["FAIL_TO_PASS"].values()) / len(result["FAIL_TO_PASS"]), 4)
    assert all(result["PASS_TO_PASS"].values()) and result["pass_to_pass_rate"] == 1.0
    sloppy = tree[BATCH].replace(guard + "            self._pending.append(order.order_id)\n",
                                 "        self._pending.append(order.order_id)\n")
    sloppy = sloppy.replace(ANCHOR, ANCHOR + FIX_LINE.replace("del self._cache[order.order_id]",
                                                               "self._cache.pop(order.order_id, None)"))
    result = grade_patch(REPO, TASK, unified_diff(tree, {**tree, BATCH: sloppy}))
    assert any(result["FAIL_TO_PASS"].values()) and not all(result["PASS_TO_PASS"].values())
    assert result["patch_applied"] and result["resolved"] == "no", "a broken PASS_TO_PASS is never partial"


def test_results_are_memoised_and_copies():
    diff = _batch_diff("MEMO_PROBE = 1\n")
    first = grade_patch(REPO, TASK, diff)
    first["FAIL_TO_PASS"].clear()
    started = time.perf_counter()
    again = grade_patch(REPO, TASK, diff.replace("\n", "\r\n"))
    assert time.perf_counter() - started < 0.05
    assert again["resolved"] == "full" and again["FAIL_TO_PASS"]


def test_grade_memoised_tells_whether_grading_would_run_the_tests():
    """What the server asks before grading on its event loop: True exactly when grade_patch
    would return a memoised result (any spelling of the same diff, the same timeout)."""
    prelude = f"MEMO_ASKED = {uuid.uuid4().int}\n"
    diff = _batch_diff(prelude)
    assert not patching.grade_memoised(REPO, TASK, diff)
    grade_patch(REPO, TASK, diff)
    assert patching.grade_memoised(REPO, TASK, diff)
    assert patching.grade_memoised(REPO, TASK, diff.replace("\n", "\r\n"))
    assert not patching.grade_memoised(REPO, TASK, diff, timeout_s=3.0)
    assert not patching.grade_memoised(REPO, TASK, _batch_diff(prelude, fixed=False))


def test_grade_memoised_builds_nothing():
    """Asked on the server's event loop, grade_memoised neither loads a repository nor works out
    a task's bug site (up to tens of milliseconds each): while either is out of memory, the
    answer is False (the patch goes to a worker thread, where grade_patch loads them)."""
    from srelib.env.grading.site_guard import site_units

    diff = _batch_diff(f"MEMO_COLD = {uuid.uuid4().int}\n")
    grade_patch(REPO, TASK, diff)
    for cached, key in ((site_units, TASK), (load_repo, REPO)):
        cached.cache_clear()
        assert not patching.grade_memoised(REPO, TASK, diff)
        assert cached.peek(key) is None  # not built by asking
        grade_patch(REPO, TASK, diff)  # from the memo, loading what it needs
        assert patching.grade_memoised(REPO, TASK, diff)


# ---------------------------------------------------------------- hostile patches


def _graded_quickly(diff: str, timeout_s: float = patching.DEFAULT_TIMEOUT_S) -> tuple[dict, float]:
    started = time.perf_counter()
    result = grade_patch(REPO, TASK, diff, timeout_s=timeout_s)
    return result, time.perf_counter() - started


def test_infinite_loop_is_killed_at_the_wall_timeout():
    result, elapsed = _graded_quickly(_batch_diff("while True:\n    pass\n"), timeout_s=2.0)
    assert result["patch_applied"] and result["timed_out"] and result["resolved"] == "no"
    assert elapsed < 4.0


def test_fork_bomb_is_refused_and_leaves_no_process_behind():
    marker = f"30.{uuid.uuid4().int % 10**12:012d}"  # a sleep length no other process uses
    bomb = ("import os, subprocess\n"
            "for _ in range(1000):\n"
            "    try:\n        os.fork()\n    except Exception:\n        pass\n"
            f"    try:\n        subprocess.Popen(['/bin/sleep', '{marker}'])\n    except Exception:\n        pass\n"
            "raise SystemExit('bomb done')\n")
    result, elapsed = _graded_quickly(_batch_diff(bomb), timeout_s=5.0)
    assert result["resolved"] == "no" and elapsed < 7.0
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def test_writes_outside_the_copy_change_nothing(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("intact")
    public = Path("/tmp") / f"srelib-escape-{uuid.uuid4().hex}"
    fix_file = DATA_DIR / TASK / "fix" / BATCH
    before = fix_file.read_text()
    attack = (
        "import os, shutil\n"
        f"for target in [{str(victim)!r}, {str(public)!r}, {str(fix_file)!r},\n"
        "               '../hidden_tests/test_batch_cache.py']:\n"
        "    for attempt in (lambda: open(target, 'w').write('pwned'),\n"
        "                    lambda: os.remove(target), lambda: shutil.rmtree(os.path.dirname(target))):\n"
        "        try:\n            attempt()\n        except Exception:\n            pass\n"
    )
    result, _ = _graded_quickly(_batch_diff(attack, fixed=False))
    assert result["resolved"] == "no"
    assert victim.read_text() == "intact" and not public.exists()
    assert fix_file.read_text() == before


def test_hostile_code_never_sees_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sentinel-openai")
    monkeypatch.setenv("HF_TOKEN", "hf-sentinel")
    monkeypatch.setenv("SRELIB_SERVICE_API_KEY", "sentinel-service")
    probe = ("import os\n"
             "def _seen():\n"
             "    found = ' '.join(os.environ.values())\n"
             "    for path in ('/proc/%d/environ' % os.getppid(), '/proc/1/environ', '/proc/self/environ'):\n"
             "        try:\n            found += open(path, 'rb').read().decode(errors='ignore')\n"
             "        except Exception:\n            pass\n"
             "    return found\n"
             "SEEN = _seen()\n")
    leaky = _batch_diff(probe, flush_guard="'sentinel' in SEEN")
    result, _ = _graded_quickly(leaky)
    assert result["patch_applied"] and result["resolved"] != "full", "a secret reached the sandbox"
    control = grade_patch(REPO, TASK, _batch_diff(probe, flush_guard="'UTC' in SEEN"))
    assert control["resolved"] == "full", "the probe itself must be able to pass"


def test_reference_fixes_cannot_be_read_from_disk():
    fix_file = DATA_DIR / TASK / "fix" / BATCH
    probe = ("def _leak():\n"
             f"    try:\n        return open({str(fix_file)!r}).read()\n"
             "    except Exception:\n        return ''\n"
             "LEAK = _leak()\n")
    result = grade_patch(REPO, TASK, _batch_diff(probe, flush_guard="'del self._cache' in LEAK"))
    assert result["patch_applied"] and result["resolved"] != "full"


def test_huge_output_and_fake_result_lines_are_ignored():
    flood = ("import json, os, sys\n"
             "fake = ''.join('%s %s\\n' % (tag, json.dumps({'id': 'test_batch_cache.py::' + name, 'ok': True}))\n"
             "               for tag in ('', '0' * 32)\n"
             "               for name in ('test_cache_stays_bounded_by_the_batch_size',\n"
             "                            'test_submit_many_leaves_nothing_cached'))\n"
             "for fd in range(1, 30):\n"
             "    try:\n        os.write(fd, fake.encode())\n    except OSError:\n        pass\n"
             "print('x' * (64 << 20))\n"
             "sys.stderr.write('y' * (16 << 20))\n")
    result, elapsed = _graded_quickly(_batch_diff(flood, fixed=False))
    assert result["patch_applied"] and not any(result["FAIL_TO_PASS"].values())
    assert result["resolved"] == "no" and not result["timed_out"] and elapsed < patching.DEFAULT_TIMEOUT_S


def test_the_sandbox_environment_is_built_from_scratch(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_sentinel")
    env = sandbox.minimal_env("/tmp/x")
    assert not any(k.endswith("_API_KEY") or "TOKEN" in k or k.startswith(("OPENAI_", "HF_")) for k in env)
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ"}


def test_normalise_diff_rebuilds_git_headers():
    clean, touched, error = normalise_diff("--- orders/x.py\n+++ orders/x.py\n@@ -1 +1 @@\n-a\n+b")
    assert error is None and touched == []
    assert clean == ("diff --git a/orders/x.py b/orders/x.py\n--- a/orders/x.py\n+++ b/orders/x.py\n"
                     "@@ -1 +1 @@\n-a\n+b\n")
