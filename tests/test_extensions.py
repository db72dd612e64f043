"""Each extension is one new file in a known folder, found by its registry, with no edit elsewhere.

The test copies the srelib package to a temporary folder, drops in one new module for each kind
(a fault family, a gate policy, an LLM provider) and, in a fresh interpreter that imports the
copy, shows each is found and works: the family's candidates build and a task of it plays to a
high reference score; the gate policy is played by suite admission and its bound is enforced;
the provider is built by ``policy_factory`` from its name and its policy plays steps.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import srelib

FAMILY = '''
"""Thread leak: the culprit's worker threads are never handed back, its heap grows with them."""

from ..families import CALLERS, Effect, Family

FAMILY = Family(
    "thread_leak", "memory_leak",
    symptoms=("restarts", "slow"),
    root_cause="memory leak in the <svc> service: <noun> worker threads are never handed back "
               "since the deploy that shipped <feature>",
    keywords=("memory", "leak", "<svc>"),
    culprit=Effect(target=(("cpu", (20.0, 35.0)),), memory_rate=(1.0, 1.6), ramp=25, logs=(
        ("WARN", "{count} idle <noun> worker threads still alive", 2, None),)),
    callers=CALLERS, borrows=("slots",))
'''

GATE_POLICY = '''
"""A cheater for the extension test: it plays the answer key, so admission must reject it."""

from srelib.analysis.gate import register
from srelib.policies.scripted.reference import ReferencePolicy


class AnswerCopyPolicy(ReferencePolicy):
    """Copies the reference's answer (a cheater no gate may let through)."""

    name = "answer_copy"


register(AnswerCopyPolicy, "max", 0.35, admission="unseeded")
'''

PROVIDER = '''
"""MockTransportChatPolicy: an LLM provider whose transport is a mock that always replies with
one fixed action, enough to show the provider registry and the chat machinery end to end."""

import json

from srelib.policies.llm.chat import ChatPolicyBase
from srelib.policies.llm.providers import provider


@provider("mock-transport")
class MockTransportChatPolicy(ChatPolicyBase):
    """Replies ``reply`` (an action as JSON) to every conversation, through no network."""

    name = "mock-transport"

    def __init__(self, reply: dict, **options):
        super().__init__(**options)
        self.reply = json.dumps(reply)

    def _complete(self, conversations):
        for item, messages in enumerate(conversations):
            self._record(len(json.dumps(messages)) // 4, len(self.reply) // 4, 0.0, item=item)
        return [self.reply for _ in conversations]
'''

CHECK = '''
import json, sys
import pytest

import srelib
from srelib.env.core import IncidentEnv
from srelib.env.tasks.taskgen import FAMILIES, candidates
from srelib.analysis.admission import admission_policies, gate_reasons
from srelib.analysis.gate import rules
from srelib.policies.llm.providers import providers
from srelib.policies.registry import policy_factory
from srelib.policies.scripted.reference import ReferencePolicy
from srelib.runners.play import run_episode

out = {"srelib": srelib.__file__}
ids = [t for t, c in candidates().items() if c.family == "thread_leak"]
task = ids[0]
ref = run_episode(IncidentEnv(), ReferencePolicy(), task, None, "joint", seed=0)
out["family"] = {"known": "thread_leak" in FAMILIES, "tasks": len(ids), "task": task,
                 "reference": ref.score["final"], "error": ref.error}
out["gate"] = {"rules": [r.policy.name for r in rules().values()],
               "admission": [c.name for c, _, _ in admission_policies()],
               "reasons": gate_reasons(task)}
factory = policy_factory("mock-transport", reply={"action_type": "view_alerts"})
episode = run_episode(IncidentEnv(), factory(), "memory_leak", "A", seed=1, max_steps=3)
out["provider"] = {"providers": sorted(providers()), "policy": type(factory()).__name__,
                   "actions": [r["action"]["action_type"] for r in episode.steps], "tokens": episode.tokens,
                   "error": episode.error}
json.dump(out, sys.stdout)
'''


def _copy_package(root: Path) -> Path:
    package = Path(srelib.__file__).parent
    shutil.copytree(package, root / "srelib", ignore=shutil.ignore_patterns("__pycache__"))
    return root / "srelib"


def test_one_new_file_adds_a_family_a_gate_policy_and_a_provider(tmp_path):
    copy = _copy_package(tmp_path / "src")
    before = {p.relative_to(copy) for p in copy.rglob("*") if p.is_file()}
    drops = {copy / "env/tasks/taskgen/family_lib/thread_leak.py": FAMILY,
             copy / "adversarial/answer_copy.py": GATE_POLICY,
             copy / "policies/llm/providers/mock_transport.py": PROVIDER}
    for path, text in drops.items():
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    after = {p.relative_to(copy) for p in copy.rglob("*") if p.is_file()}
    assert after - before == {p.relative_to(copy) for p in drops}  # three new files, nothing else

    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src"), "SRELIB_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", CHECK], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["srelib"].startswith(str(tmp_path))

    family = out["family"]
    assert family["known"] and family["tasks"] > 0 and family["error"] is None
    assert family["task"].startswith("thread_leak.") and family["reference"] >= 0.95

    gate = out["gate"]
    assert "answer_copy" in gate["rules"] and "answer_copy" in gate["admission"]
    assert gate["reasons"] == ["answer_copy above 0.35"]  # played by admission, and caught

    provider = out["provider"]
    assert {"openai", "hf", "mock-transport"} <= set(provider["providers"])
    assert provider["policy"] == "MockTransportChatPolicy"
    assert provider["actions"] == ["view_alerts"] * 3 and provider["error"] is None
    assert provider["tokens"] > 0  # the mock transport's call records reach the runner


def test_the_registries_name_what_is_valid_on_bad_input():
    from srelib.analysis.gate import GateRule
    from srelib.policies.llm.providers import provider_class
    from srelib.policies.registry import policy_factory

    assert type(policy_factory("openai", model="m", api_key="k")()).__name__ == "OpenAIChatPolicy"
    with pytest.raises(ValueError, match="LLM providers: hf, openai"):
        policy_factory("no-such-policy")
    with pytest.raises(ValueError, match="takes no options"):
        policy_factory("heuristic", model="m")
    with pytest.raises(ValueError, match="valid providers: hf, openai"):
        provider_class("no-such-provider")
    with pytest.raises(ValueError, match="kind must be one of"):
        GateRule(dict, "at most", 0.3)
    with pytest.raises(ValueError, match="admission must be one of"):
        GateRule(dict, "max", 0.3, admission="always")
