"""One GPU check that fits a short loan: the rollout table, then the train recipe, in <= 5 min.

Stages, most valuable first, each in its own process with its own time limit (a stage that runs
past it is killed with its process group, and the next one starts):

1. ``rollout``: ``gpu_gemma.bench`` (random-weight Gemma-3-1B architecture, bf16 where native):
   lockstep rollouts at batch 1, 8 and 32 with ``kv_cache`` True, False and ``auto``, 3 steps
   of up to 64 new tokens; generated tokens/s, wall and peak GiB per row. Each row is printed
   as it finishes, so a cut stage keeps its finished rows.
2. ``train_unquantised`` and 3. ``train_4bit``: ``gpu_train.train`` (notebook 07's recipe,
   ``srelib.training.lora``): LoRA SFT, one episode played by the trained model, one GRPO step.

After every stage the summary so far goes to ``$OUT/gpu_check.json`` (``OUT`` defaults to the
current folder). The check bounds the recipe's costs, and says so in the JSON: 10 SFT steps, the
episode's replies capped at 128 new tokens, and GRPO completions of 256 tokens instead of the
recipe's 1,024. A random-weight model never writes a tool call, so every GRPO completion runs to
its limit, and the check's cost grows with that limit while what it checks (rollouts through
the environment's tools, the loss, the KL to the frozen adapters, memory) does not; the same
holds for the episode's replies, which never contain an action. ``--tiny`` runs the same stages
with a tiny config on the CPU, with smaller budgets (``TINY_BUDGET``, ``ROLLOUT``) so that a
busy 2-core machine finishes them in 5 minutes.

    python bench/gpu_check.py            # on a GPU machine (see the README for an offline one)
    python bench/gpu_check.py --tiny     # the same stages on a CPU, to check the script
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: (stage, time limit in seconds on a GPU, on the CPU with --tiny)
STAGES = (("rollout", 130, 80), ("train_unquantised", 80, 105), ("train_4bit", 85, 105))
#: What the check runs of the recipe on a GPU, and with --tiny (see the docstring for why).
CHECK_BUDGET = {"sft_steps": 10, "sft_max_length": 8192, "grpo_steps": 1, "play_tokens": 128,
                "grpo_completion": 256}
TINY_BUDGET = {"sft_steps": 2, "sft_max_length": 2048, "grpo_steps": 1, "play_tokens": 32,
               "grpo_completion": 64}
#: Rollouts: batch sizes, new tokens per reply and observation characters, GPU and --tiny.
ROLLOUT = {False: ([1, 8, 32], 64, 1500), True: ([1, 2, 4], 8, 400)}
ROW_PREFIX = "gpu_gemma: "


def run_stage(name: str, tiny: bool, scratch: Path) -> dict:
    """Run one stage in this process; its summary."""
    if name == "rollout":
        import gpu_gemma

        batch_sizes, new_tokens, obs_chars = ROLLOUT[tiny]
        return gpu_gemma.bench(tiny, batch_sizes, [True, False, "auto"], new_tokens,
                               obs_chars=obs_chars)
    import gpu_train

    options = argparse.Namespace(tiny=tiny, **(TINY_BUDGET if tiny else CHECK_BUDGET))
    folder = gpu_train.save_model(scratch / "model", tiny)
    return gpu_train.train(folder, name == "train_4bit", options, scratch)


def supervise(name: str, limit: float, tiny: bool, scratch: Path) -> dict:
    """Run stage ``name`` in a child process for at most ``limit`` seconds, echoing its output;
    its status, wall time, result and the rollout rows it printed."""
    result_file = scratch / f"{name}.json"
    command = [sys.executable, __file__, "--stage", name, "--scratch", str(scratch)]
    child = subprocess.Popen(command + (["--tiny"] if tiny else []), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    rows, tail = [], []

    def echo():
        for line in child.stdout:
            print(f"  [{name}] {line}", end="", flush=True)
            tail[:] = (tail + [line])[-20:]
            if line.startswith(ROW_PREFIX):
                rows.append(json.loads(line[len(ROW_PREFIX):]))

    reader = threading.Thread(target=echo, daemon=True)
    reader.start()
    started = time.perf_counter()
    try:
        code = child.wait(timeout=limit)
        status = "ok" if code == 0 else f"failed (exit {code})"
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        status = f"cut at its {limit:g} s limit"
    reader.join(timeout=5)
    stage = {"stage": name, "status": status, "limit_s": limit,
             "wall_s": round(time.perf_counter() - started, 1)}
    if result_file.exists():
        stage["result"] = json.loads(result_file.read_text())
    elif rows:
        stage["rows"] = rows
    if status != "ok":
        stage["output_tail"] = "".join(tail)
    return stage


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny config on the CPU")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage:  # a child: run one stage, leave its summary for the parent
        summary = run_stage(args.stage, args.tiny, Path(args.scratch))
        Path(args.scratch, f"{args.stage}.json").write_text(json.dumps(summary, default=str))
        return None

    out = Path(os.environ.get("OUT") or ".", "gpu_check.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report = {"tiny": args.tiny, "check_budget": TINY_BUDGET if args.tiny else CHECK_BUDGET,
              "rollout": dict(zip(("batch_sizes", "max_new_tokens", "obs_chars"),
                                  ROLLOUT[args.tiny])), "stages": []}
    with tempfile.TemporaryDirectory(prefix="srelib-gpu-check-") as scratch:
        for name, gpu_limit, cpu_limit in STAGES:
            limit = cpu_limit if args.tiny else gpu_limit
            print(f"gpu_check: {name} (limit {limit} s) at {time.perf_counter() - started:.0f} s",
                  flush=True)
            report["stages"].append(supervise(name, limit, args.tiny, Path(scratch)))
            report["total_s"] = round(time.perf_counter() - started, 1)
            out.write_text(json.dumps(report, indent=2))
            print(f"gpu_check: {name} {report['stages'][-1]['status']} in "
                  f"{report['stages'][-1]['wall_s']} s; wrote {out}", flush=True)
    return report


if __name__ == "__main__":
    done = main()
    sys.exit(0 if done is None or all(s["status"] == "ok" for s in done["stages"]) else 1)
