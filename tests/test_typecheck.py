"""The type checker passes over the layers it covers.

pyright runs over the paths that ``[tool.pyright]`` in pyproject.toml lists (the one place they
are named: the environment, the episode loop, the results and the runners) and must report no
error. It is pinned in the ``dev`` extra; without it the test is skipped, saying so.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("pyright") is None,
                    reason="pyright is not installed (pip install -e '.[dev]' brings it)")
@pytest.mark.skipif(shutil.which("node") is None,
                    reason="pyright runs on Node, which is not installed (apt-get install nodejs)")
def test_pyright_reports_no_errors():
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}
    # --project: this repository's pyproject.toml, never a pyrightconfig.json in a folder above
    done = subprocess.run([sys.executable, "-m", "pyright", "--outputjson", "--project",
                           str(ROOT / "pyproject.toml"), "--pythonpath", sys.executable],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    report = json.loads(done.stdout)
    errors = [f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']}"
              for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert report["summary"]["filesAnalyzed"] > 0, done.stderr
    assert errors == [], f"{len(errors)} type errors:\n" + "\n".join(errors)
