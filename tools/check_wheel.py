"""The installed wheel, tested as users get it (``make check-wheel``; ``.ci/run`` runs it).

Every other test runs the editable checkout. This script builds the wheel and the sdist
(``python -m build``), checks them with ``twine check --strict`` and reads the wheel's file
list (the repositories, the scenario folders, the suite file, the report's assets, the
``srelib`` entry point). Then, from a folder outside the checkout and with no ``PYTHONPATH``:

1. a fresh virtual environment with ``srelib[demo]`` alone: ``srelib --version``,
   ``srelib demo`` on a small grid, ``srelib eval`` and ``srelib report --html``, and a patch
   graded in the sandbox (the reference fix of one task, through ``IncidentEnv``), each
   checked to run from site-packages; then, with what Colab's runtime brings beside it
   (ipykernel, ipywidgets) and papermill, notebook 01 under papermill;
2. a second environment with ``srelib[notebooks,hf]`` (torch and transformers pinned in the
   same pip command) runs notebook 05's CPU path (the tiny offline model) under papermill.

Every command and its time are logged (``--log``, default ``build/check-wheel.log``); the
script stops at the first failure with its output. Exit status 0: the wheel works as installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: torch and transformers as the Makefile pins them, in the same pip command (the local CPU wheel)
PINS = ("torch==2.13.0", "transformers==5.24.0")
#: files the wheel must carry besides the modules: (what, path prefix, at least how many)
PACKAGE_DATA = (("the repositories", "srelib/env/phase2/repo_data/", 10),
                ("the scenario folders", "srelib/env/simulation/scenario_data/", 10),
                ("the generated suite", "srelib/env/tasks/taskgen/suite.json", 1),
                ("the suite's digest", "srelib/env/tasks/taskgen/suite_digest.json", 1),
                ("the report's script", "srelib/report/report.js", 1),
                ("the report's stylesheet", "srelib/report/report.css", 1))

GRADE = """
import sys
import srelib
from srelib.env.core import IncidentEnv
from srelib.runners.play import run_episode
# pool B hands over the oracle belief: the reference policy proposes the task's fix, which the
# hidden tests grade in the sandbox
episode = run_episode(IncidentEnv(), srelib.scripted_policy("reference")(), task="memory_leak",
                      pool="B", seed=0)
patch = episode.score["patch"]
print(f"patch graded in the {patch['isolation']} sandbox (verified: {patch['verified']}): "
      f"resolved {patch['resolved']}, final {episode.score['final']}; srelib from "
      f"{srelib.__file__}")
sys.exit(0 if patch["resolved"] == "full" and patch["verified"]
         and "site-packages" in srelib.__file__ else 1)
"""


class Log:
    """Runs commands, writing each with its time and output to the log and a line to stdout."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = path.open("w")
        self.start = time.perf_counter()

    def say(self, text: str) -> None:
        print(text, flush=True)
        self.file.write(text + "\n")
        self.file.flush()

    def run(self, argv: list[str], cwd: Path, env: dict | None = None, timeout: int = 1800) -> str:
        began = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
        took = time.perf_counter() - began
        self.file.write(f"$ {shlex.join(argv)}   (in {cwd}, {took:.1f} s, exit {done.returncode})\n"
                        f"{done.stdout}{done.stderr}\n")
        self.file.flush()
        print(f"  {took:6.1f} s  {shlex.join(argv)[:150]}", flush=True)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr)[-4000:]
            raise SystemExit(f"FAILED (exit {done.returncode}): {shlex.join(argv)}\n{tail}")
        return done.stdout


def build(log: Log, dist: Path) -> tuple[Path, Path]:
    """Build the wheel and sdist into ``dist`` and check them with twine."""
    log.say("== build and twine check")
    log.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], cwd=ROOT)
    wheel, sdist = next(dist.glob("*.whl")), next(dist.glob("*.tar.gz"))
    log.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], cwd=ROOT)
    return wheel, sdist


def check_contents(log: Log, wheel: Path) -> None:
    """The wheel carries the package data and the ``srelib`` console script."""
    log.say("== package data and entry points")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        points = archive.read(entry).decode()
    for what, prefix, least in PACKAGE_DATA:
        count = sum(1 for n in names if n.startswith(prefix))
        folders = {n[len(prefix):].split("/")[0] for n in names if n.startswith(prefix)}
        shown = len(folders) if prefix.endswith("/") else count
        log.say(f"  {what}: {shown} ({prefix})")
        if shown < least:
            raise SystemExit(f"FAILED: the wheel has {shown} of {what}, expected {least} or more")
    if "srelib = srelib.cli:main" not in points:
        raise SystemExit(f"FAILED: no srelib console script in {entry}:\n{points}")
    log.say("  console script: srelib = srelib.cli:main")


def venv(log: Log, where: Path, requirements: list[str]) -> dict:
    """A fresh virtual environment at ``where`` with ``requirements``; its clean environment."""
    log.run([sys.executable, "-m", "venv", str(where)], cwd=where.parent)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{where / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(where)
    log.run([str(where / "bin" / "pip"), "install", "-q", *requirements], cwd=where.parent)
    return env


def notebook(log: Log, python: Path, env: dict, name: str, work: Path, *params: str) -> None:
    """Run ``notebooks/NAME`` under papermill on the environment's own kernel, in ``work``."""
    log.run([str(python), "-m", "ipykernel", "install", "--sys-prefix", "--name", "wheel"],
            cwd=work, env=env)
    out = work / f"executed-{name}"
    log.run([str(python), "-m", "papermill", "-k", "wheel", "--cwd", str(work),
             str(ROOT / "notebooks" / name), str(out), *params], cwd=work, env=env)
    log.say(f"  {name}: executed to {out}")


def demo_environment(log: Log, wheel: Path, work: Path) -> None:
    log.say("== environment 1: srelib[demo] alone")
    where = work / "venv-demo"
    env = venv(log, where, [f"srelib[demo] @ {wheel.as_uri()}"])
    srelib, python = str(where / "bin" / "srelib"), where / "bin" / "python"
    run = work / "run"
    version = log.run([srelib, "--version"], cwd=work, env=env).strip()
    log.say(f"  {version}")
    log.run([srelib, "demo", "--seeds", "1", "--generated-tasks", "1", "--no-progress",
             "--out", str(work / "demo")], cwd=work, env=env)
    log.run([srelib, "eval", "--policy", "heuristic-revert", "--policy", "null", "--tasks",
             "memory_leak", "--pools", "C", "--seeds", "2", "--out", str(run), "--no-progress"],
            cwd=work, env=env)
    said = log.run([srelib, "report", str(run), "--html", str(work / "report.html")], cwd=work,
                   env=env)
    log.say("  " + said.strip().splitlines()[-1])
    log.say("  " + log.run([str(python), "-c", GRADE], cwd=work, env=env).strip())
    where_from = log.run([str(python), "-c", "import srelib; print(srelib.__file__)"], cwd=work,
                         env=env).strip()
    if not where_from.startswith(str(where)):
        raise SystemExit(f"FAILED: srelib came from {where_from}, not the environment")
    log.say(f"  srelib imported from {where_from}")
    log.run([str(where / "bin" / "pip"), "install", "-q", "papermill", "ipykernel", "ipywidgets"],
            cwd=work, env=env)
    notebook(log, python, env, "01_tour.ipynb", work)


def notebook_environment(log: Log, wheel: Path, work: Path) -> None:
    log.say("== environment 2: srelib[notebooks,hf], notebook 05's CPU path")
    where = work / "venv-notebooks"
    env = venv(log, where, [f"srelib[notebooks,hf] @ {wheel.as_uri()}", *PINS, "papermill"])
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU path, on a machine with a GPU too
    env["SRELIB_AGENT_HOME"] = str(work / "agents")  # a first run: no saved agent
    notebook(log, where / "bin" / "python", env, "05_gemma_colab.ipynb", work,
             "-y", json.dumps({"SEEDS": 1, "TASKS": ["memory_leak"], "MAX_STEPS": 6,
                               "BASELINES": ["null", "heuristic-revert"]}))
    said = _printed(work / "executed-05_gemma_colab.ipynb")
    note = next((line for line in said.splitlines() if line.startswith("No saved agent")), None)
    if note is None or "seconds" not in note:
        raise SystemExit("FAILED: notebook 05 did not say how long training the agent takes")
    log.say(f"  notebook 05 said: {note}")


def _printed(path: Path) -> str:
    """Everything an executed notebook's cells printed."""
    cells = json.loads(path.read_text())["cells"]
    return "".join("".join(o.get("text", "")) for c in cells for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", type=Path, default=ROOT / "build" / "check-wheel.log")
    parser.add_argument("--skip-notebook-env", action="store_true",
                        help="leave out the second environment (notebook 05)")
    args = parser.parse_args(argv)
    log = Log(args.log)
    with tempfile.TemporaryDirectory(prefix="srelib-wheel-") as tmp:
        work = Path(tmp)
        wheel, sdist = build(log, work / "dist")
        log.say(f"  {wheel.name} ({wheel.stat().st_size / 1e6:.2f} MB), "
                f"{sdist.name} ({sdist.stat().st_size / 1e6:.2f} MB)")
        check_contents(log, wheel)
        demo_environment(log, wheel, work)
        if not args.skip_notebook_env:
            notebook_environment(log, wheel, work)
    log.say(f"== the wheel works as installed ({time.perf_counter() - log.start:.0f} s); "
            f"log: {args.log}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
