"""The notebooks' checks hold on another CPU, and still catch a changed scripted number.

    python tools/check_other_cpu.py            # `make test-cpus`; .ci/run runs it after make test

Torch picks its CPU kernels by processor, so the small agent trained on another machine has
other weights, and its numbers in notebooks 04, 05 and 07 differ in their last digits. Those
numbers are never compared byte for byte (their cells are tagged ``nbval-ignore-output`` and
followed by cells that check what the numbers must show); every scripted policy's number is.
This script shows both halves:

1. **Another kernel level passes.** With ``ATEN_CPU_CAPABILITY`` one level below this
   machine's, ``srelib agent train --if-missing`` trains that level's agent (its own keyed
   folder) and nbval runs the three notebooks with it. They must pass. The two agents'
   weight digests are printed, to show that they differ.
2. **A changed scripted number fails.** A copy of notebook 05 whose stored table of scripted
   baselines has one score changed must fail nbval, in that cell.

Exits non-zero if either half does not hold.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
AGENT_NOTEBOOKS = ("04_llm_openai.ipynb", "05_gemma_colab.ipynb", "07_train.ipynb")
#: Kernel levels from the highest; ATEN_CPU_CAPABILITY can only lower torch's choice.
LEVELS = ("AVX512", "AVX2", "DEFAULT")
NBVAL = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist",
         "loadfile", "--nbval", "--nbval-sanitize-with", str(NOTEBOOKS / "sanitize.cfg")]


def python(code: str, env: dict) -> str:
    return subprocess.run([sys.executable, "-c", code], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def agent_digest(env: dict) -> tuple[str, str]:
    """The default agent's folder under ``env`` and the sha256 of its weights."""
    folder = python("from srelib.training.agent import find_agent; print(find_agent())", env)
    weights = Path(folder) / "model.safetensors"
    return folder, hashlib.sha256(weights.read_bytes()).hexdigest()


def other_level_passes() -> bool:
    native = python("import torch; print(torch.backends.cpu.get_cpu_capability())", os.environ)
    lower = LEVELS[LEVELS.index(native) + 1:] if native in LEVELS else ()
    if not lower:
        print(f"This CPU runs torch's {native} kernels, the lowest level: no other to try.")
        return True
    env = {**os.environ, "ATEN_CPU_CAPABILITY": lower[0].lower()}
    print(f"1. Kernel level {lower[0]} (this machine: {native}): training its agent, then nbval",
          flush=True)
    subprocess.run([sys.executable, "-m", "srelib", "agent", "train", "--if-missing"], env=env,
                   check=True)
    for name, level_env in (("native", os.environ), (lower[0], env)):
        folder, sha = agent_digest(level_env)
        print(f"   {name} agent: {Path(folder).name}, weights sha256 {sha[:12]}")
    run = subprocess.run([*NBVAL, *(str(NOTEBOOKS / n) for n in AGENT_NOTEBOOKS)], env=env,
                         cwd=ROOT)
    print(f"   nbval under {lower[0]}: {'passed' if run.returncode == 0 else 'FAILED'}")
    return run.returncode == 0


def changed_scripted_number_fails() -> bool:
    notebook = json.loads((NOTEBOOKS / "05_gemma_colab.ipynb").read_text())
    cell, before, after = change_a_baseline_score(notebook)
    print(f"2. Notebook 05 with a scripted baseline's score changed ({before} -> {after}) in "
          f"cell {cell}: nbval must fail there", flush=True)
    with tempfile.TemporaryDirectory(prefix="srelib-nbval-") as scratch:
        copy = Path(scratch) / "05_changed.ipynb"
        copy.write_text(json.dumps(notebook))
        run = subprocess.run([*NBVAL, str(copy)], cwd=ROOT, capture_output=True, text=True)
    failed = re.findall(r"FAILED \S*::Cell (\d+)", run.stdout)
    print(f"   nbval exit {run.returncode}; failed cells: {failed or 'none'}")
    return run.returncode != 0 and failed == [str(cell)]


def change_a_baseline_score(notebook: dict) -> tuple[int, str, str]:
    """Add 0.01 to the first score of the ``heuristic-revert`` column in the first compared
    cell that shows it; returns the code cell's index as nbval counts it and the old and new
    text."""
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    for index, cell in enumerate(code):
        if "nbval-ignore-output" in cell["metadata"].get("tags", []):
            continue
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/markdown")
            if text and "heuristic-revert" in "".join(text):
                joined = "".join(text)
                row = next(line for line in joined.splitlines()
                           if re.search(r"\d\.\d\d \[", line))
                cells = row.split("|")
                before = re.search(r"\d\.\d\d", cells[-2]).group(0)
                after = f"{float(before) + 0.01:.2f}"
                cells[-2] = cells[-2].replace(before, after, 1)
                output["data"]["text/markdown"] = joined.replace(row, "|".join(cells))
                return index, before, after
    raise RuntimeError("no compared cell of notebook 05 shows the heuristic-revert baseline")


def main() -> int:
    results = [other_level_passes(), changed_scripted_number_fails()]
    print("check_other_cpu:", "passed" if all(results) else "FAILED")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
