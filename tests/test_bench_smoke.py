"""The benchmark scripts run end to end at tiny sizes, in real subprocesses, and report rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import bench_env  # noqa: E402
import bench_grading  # noqa: E402
from common import SEED_POLICIES, load_seed_policies  # noqa: E402

pytestmark = pytest.mark.bench_script

needs_seed = pytest.mark.skipif(
    not SEED_POLICIES.exists(),
    reason=f"the seed's policy module is not at {SEED_POLICIES} (shared/ sits beside the checkout)")


def run_bench(tmp_path, script: str, *args: str) -> dict[str, dict]:
    out = tmp_path / f"{script}.json"
    done = subprocess.run([sys.executable, str(BENCH / script), *args, "--json", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "| bench | metric |" in done.stdout
    return {row["metric"]: row for row in json.loads(out.read_text())}


def test_import_bench_finds_no_heavy_module(tmp_path):
    rows = run_bench(tmp_path, "bench_import.py", "--repeats", "2")
    assert rows["heavy modules loaded"]["value"] == "none"
    assert 0 < rows["import srelib median"]["value"] < 5


def test_grading_bench_times_misses_and_cheaper_memo_hits(tmp_path):
    rows = run_bench(tmp_path, "bench_grading.py", "--patches", "2", "--hits", "20", "--burst", "3")
    miss = rows["unique patch (miss) median, with a spare sandbox"]["value"]
    cold = rows["unique patch (miss) median, each starting its own sandbox"]["value"]
    hit = rows["memoised hit median"]["value"]
    assert 0 < hit < miss and 0 < hit < cold


def test_unique_patches_differ_but_grade_as_the_fix():
    from srelib.env.grading.pipeline import grade_patch

    task, repo, fix = bench_grading.fixable_tasks()[0]
    first, second = (bench_grading.unique_patch(fix, tag) for tag in ("smoke_a", "smoke_b"))
    assert first != second and first.startswith(fix)
    for diff in (first, second):
        result = grade_patch(repo, task, diff)
        assert result["patch_applied"] and result["resolved"] == "full"


@needs_seed
def test_env_bench_reports_episode_and_step_rates(tmp_path):
    rows = run_bench(tmp_path, "bench_env.py", "--seeds", "1", "--repeats", "1")
    episodes = rows["srelib episodes/s"]["value"]
    assert episodes > 0 and rows["srelib steps/s"]["value"] >= episodes
    assert "srelib / reference episodes/s" not in rows  # no reference given, no ratio


def test_reference_path_must_hold_the_package(tmp_path):
    with pytest.raises(ValueError, match="incident_env"):
        bench_env.reference_root(tmp_path)
    (tmp_path / "incident_env").mkdir()
    assert bench_env.reference_root(tmp_path) == tmp_path.resolve()
    assert bench_env.reference_root(tmp_path / "incident_env") == tmp_path.resolve()


@needs_seed
def test_seed_policies_load_against_srelib():
    seed = load_seed_policies()
    action = seed.NullPhase1Policy()({}, 1, "memory_leak")
    assert action["action_type"] == "transition_to_phase2"
    assert seed.OracleP1ThenRandomP2Policy(seed=0)({}, 1, "memory_leak")["parameters"]["belief"][
        "service_confidence"] == 1.0


def test_seed_loader_rejects_a_file_without_the_seed_imports(tmp_path):
    other = tmp_path / "policies.py"
    other.write_text("import os\n")
    with pytest.raises(ValueError, match="seed's imports"):
        load_seed_policies(other)


@needs_seed
def test_memory_bench_reads_rss_before_and_after(tmp_path):
    rows = run_bench(tmp_path, "bench_memory.py", "--episodes", "30", "--warmup", "10")
    assert rows["RSS after 10 episodes"]["value"] > 0
    assert rows["RSS after 30 episodes"]["value"] > 0


@pytest.mark.gpu_path
def test_gpu_script_runs_tiny_on_cpu(tmp_path, tiny_model_dir):
    done = subprocess.run(
        [sys.executable, str(BENCH / "gpu_gemma.py"), "--tiny", "--batch-sizes", "1", "2",
         "--max-new-tokens", "4", "--max-steps", "2", "--model-dir", str(tiny_model_dir)],
        cwd=REPO, capture_output=True, text=True, timeout=240,
        env={**os.environ, "OUT": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "gpu_bench.json").read_text())
    assert [(r["batch_size"], r["kv_cache_setting"], r["kv_cache"])
            for r in summary["results"]] == [
        (1, True, True), (1, False, False), (1, "auto", True),  # auto keeps caches on a CPU
        (2, True, True), (2, False, False), (2, "auto", True)]
    for result in summary["results"]:
        assert result["generated_tokens"] > 0 and result["episodes_per_min"] > 0
        cached = result["prompt_tokens"] - result["prefill_tokens"]
        assert cached > 0 if result["kv_cache"] else cached == 0


@pytest.mark.gpu_path
def test_gpu_training_script_runs_tiny_on_cpu(tmp_path):
    """The GPU recipe check (LoRA SFT, an episode, then GRPO on the same adapters, unquantised
    and 4-bit, with bitsandbytes' CPU kernels standing in for CUDA's) runs end to end on a tiny
    config, so a lent GPU's few minutes are not spent on a broken script, and the recipe keeps
    its invariants: SFT trains LoRA adapters alone on a frozen base, GRPO trains those adapters
    on against a frozen copy of them."""
    pytest.importorskip("trl")
    pytest.importorskip("bitsandbytes")
    done = subprocess.run(
        [sys.executable, str(BENCH / "gpu_train.py"), "--tiny", "--sft-steps", "3",
         "--grpo-steps", "1", "--play-tokens", "32", "--grpo-completion", "64",
         "--sft-max-length", "2048"],  # gpu_check's tiny budget: the same code, less of it
        cwd=REPO, capture_output=True, text=True, timeout=600,  # beside other tests, a margin
        env={**os.environ, "OUT": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "gpu_train.json").read_text())
    assert [run["four_bit"] for run in summary["runs"]] == [False, True]
    for run in summary["runs"]:
        assert run["sft"]["last_loss"] < run["sft"]["first_loss"]
        assert [log["step"] for log in run["grpo"]] == [1]
        assert run["play"]["steps"] > 0
        assert 0 < run["sft"]["trainable_params"] == run["grpo_trainable_params"] < summary["params"]
        recipe = run["recipe"]
        assert recipe.pop("grpo_adapters") == ["default", "ref"]
        assert all(recipe.values()), {k: v for k, v in recipe.items() if not v}


def test_gpu_check_cuts_a_stage_at_its_limit_and_goes_on(tmp_path):
    """A stage past its time limit is killed (its whole process group) and reported as cut."""
    import gpu_check

    started = time.perf_counter()
    stage = gpu_check.supervise("rollout", 3, True, tmp_path)
    assert stage["status"] == "cut at its 3 s limit" and "result" not in stage
    assert time.perf_counter() - started < 30


def test_run_all_prints_one_table(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--quick", "--only",
                           "bench_import.py", "bench_grading.py"],
                          cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("| bench | metric |") == 1
    assert "| import | import srelib median" in done.stdout
    assert "| grading | " in done.stdout and "| failed " not in done.stdout


def test_notebook_bench_times_what_make_test_runs():
    """bench_notebooks times the nbval run of ``make test`` over every notebook (running it
    here would run the notebooks a second time in the suite)."""
    import bench_notebooks

    assert " ".join(bench_notebooks.COMMAND[1:]) in (REPO / "Makefile").read_text()
    assert bench_notebooks.notebooks() == sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    from srelib.training.tiny_model import tiny_chat_model

    return Path(tiny_chat_model(tmp_path_factory.mktemp("tiny") / "model"))


def test_run_all_writes_results_and_the_docs_table(tmp_path):
    readme = tmp_path / "benchmarks.md"
    readme.write_text("# x\n\n<!-- bench-table:start -->\nold\n<!-- bench-table:end -->\nafter\n")
    results = tmp_path / "results.md"
    only = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--only", "bench_import.py",
                           "--table", str(readme)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert only.returncode != 0 and "--table takes a full run" in only.stderr
    sys.path.insert(0, str(BENCH))
    import results_doc
    from common import Row

    done = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--quick", "--only",
                           "bench_import.py", "--results", str(results)],
                          cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    text = results.read_text()
    for expected in ("- date: ", "- machine: ", "- commit: ", "`python bench/bench_import.py "
                     "--repeats 3`", "| import | import srelib median"):
        assert expected in text, expected
    loaded = results_doc.ScriptRun("bench_env.py", "python bench/bench_env.py", 99.0, 1.0,
                                   [Row("env", "ratio", 2.0, "x", ">= 1x", True)])
    quiet = results_doc.ScriptRun("bench_import.py", "python bench/bench_import.py", 0.0, 1.0,
                                  [Row("import", "median", 0.1, "s", "<= 1 s", True),
                                   Row("import", "no target", 1.0)])
    results_doc.write_targets(readme, [loaded, quiet])
    table = readme.read_text()
    assert "old" not in table and table.endswith("<!-- bench-table:end -->\nafter\n")
    assert "under load: load average 99.0" in table and "no target" not in table
    assert "| import | median | 0.1 s | <= 1 s | yes |" in table
