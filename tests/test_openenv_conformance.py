"""srelib against OpenEnv's own checker and conventions: ``openenv validate --level static``
passes, the manifest declares what the code does, ``/metadata`` names srelib, and every reward
of an evaluation lies in the declared range."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv")
yaml = pytest.importorskip("yaml")

import srelib  # noqa: E402
from srelib.env.actions import ACTION_NAMES  # noqa: E402
from srelib.env.core import REWARD_RANGE  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _package_copy(tmp_path: Path) -> Path:
    """The package's files (tracked, or new and not ignored) without local venvs and caches,
    which OpenEnv's source digest would walk."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    target = tmp_path / "srelib"
    for name in filter(None, listed):
        source = ROOT / name.decode()
        if source.is_file() and not source.is_symlink():
            (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / name.decode())
    return target


def test_openenv_validate_static_passes(tmp_path):
    package = _package_copy(tmp_path)
    run = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", str(package),
                          "--level", "static", "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["verdict"] == "pass", report
    assert [(r["check_id"], r["status"]) for r in report["results"]] == [("static.manifest", "pass")]


def test_the_manifest_declares_what_the_code_does():
    manifest = yaml.safe_load((ROOT / "openenv.yaml").read_text())
    assert (manifest["name"], manifest["version"]) == ("srelib", srelib.__version__)
    assert manifest["app"] == "srelib.serve.server:app"
    validation = manifest["validation"]
    assert tuple(validation["reward"]["range"]) == REWARD_RANGE
    assert validation["capabilities"]["declared_tools"] == list(ACTION_NAMES)


def test_metadata_names_srelib_with_its_schemas_and_reward_range():
    from fastapi.testclient import TestClient

    from srelib.serve.server import build_app
    from srelib.serve.wire import SreAction, SreObservation

    with TestClient(build_app()) as client:
        data = client.get("/metadata").json()
        schema = client.get("/schema").json()
    assert (data["name"], data["version"]) == ("srelib", srelib.__version__)
    assert "SRE incidents" in data["description"]
    assert data["action_schema"] == SreAction.model_json_schema() == schema["action"]
    assert data["observation_schema"] == SreObservation.model_json_schema() == schema["observation"]
    assert set(data["action_schema"]["x-actions"]) == set(ACTION_NAMES)
    assert tuple(data["reward_range"]) == REWARD_RANGE


class _Invalid:
    """Sends an action no environment accepts until the step budget runs out."""

    def __call__(self, observation, phase, task):
        return {"action_type": "not_an_action"}


def test_every_reward_of_an_evaluation_lies_in_the_declared_range(tmp_path):
    """Scripted policies that err (invalid actions until the budget ends, a random phase 2),
    investigate (heuristic) and fix (reference), on every classic task of pool C."""
    from srelib.policies.registry import scripted_policy

    policies = {"invalid": _Invalid, **{name: scripted_policy(name)
                                        for name in ("random", "heuristic-revert", "reference")}}
    frame = srelib.evaluate(policies, tasks="classic", pools=("C",), seeds=1, out=tmp_path,
                            progress=False)
    episodes = srelib.load_episodes(tmp_path)
    assert len(episodes) == len(frame) >= 4 * 8 and not any(e.error for e in episodes)
    low, high = REWARD_RANGE
    rewards = [step["reward"] for episode in episodes for step in episode.steps]
    assert all(low <= r <= high for r in rewards), [r for r in rewards if not low <= r <= high]
    assert min(rewards) == low and max(rewards) > 1  # both ends are reached, not just [0, 1]
    for episode in episodes:  # and each episode's return is its score
        assert sum(s["reward"] for s in episode.steps) == pytest.approx(episode.final, abs=1e-3)
