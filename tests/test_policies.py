"""Scripted policies on the real environment, composition, reset, diff reversal and prompts."""

import importlib
import subprocess
from dataclasses import asdict

import pytest

import srelib
from srelib.env.actions import ACTION_SPECS, SERVICES
from srelib.env.belief import BELIEF_FIELDS, BeliefState
from srelib.policies import (CompositePolicy, HeuristicPhase1Policy, NullPhase1Policy,
                             OracleP1ThenRandomP2Policy, RandomPhase2Policy, RevertPhase2Policy,
                             call_reset)
from srelib.policies.llm.prompts import CUT_MARK, SYSTEM_PROMPT, Transcript, cut_middle, render_observation
from srelib.policies.scripted.revert import reverse_diff
from srelib.analysis.validity import pool_for as joint_pool

TASKS = list(srelib.TASKS)


def run(policy, task, pool=None, mode=None, seed=0):
    env = srelib.IncidentEnv()
    obs, info = env.reset(task=task, pool=pool, mode=mode, seed=seed)
    call_reset(policy, seed, task)
    done = False
    while not done:
        action = policy(obs, obs["current_phase"], task)
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        assert info["valid"], (action, info.get("error"))
    return env.trajectory, info


SEEDED = [
    ("null+random", lambda: CompositePolicy(NullPhase1Policy(), RandomPhase2Policy(seed=42)), "C"),
    ("random", lambda: RandomPhase2Policy(seed=0), "B"),
    ("oracle+random", lambda: OracleP1ThenRandomP2Policy(seed=0), "C"),
    ("heuristic+revert", lambda: CompositePolicy(HeuristicPhase1Policy(), RevertPhase2Policy()), "C"),
]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("label,make,pool", SEEDED, ids=[s[0] for s in SEEDED])
def test_scripted_policies_finish_every_task_with_valid_actions(task, label, make, pool):
    if pool in ("B", "C") and srelib.get_scenario(task).heldout:
        pool = "D" if pool == "C" else None
    mode = "p2_only" if pool is None else None
    trajectory, info = run(make(), task, pool=pool, mode=mode, seed=1)
    assert info["ended_by"] in ("propose_patch", "declare_no_change")
    assert 0.0 <= info["score"]["final"] <= 1.0


def test_random_baseline_is_reproducible_per_seed_and_varies_across_seeds():
    def reads(seed):
        trajectory, _ = run(RandomPhase2Policy(seed=0), "info_ordering", pool="B", seed=seed)
        return [r["action"]["parameters"].get("path") for r in trajectory
                if r["action"]["action_type"] == "read_file"]

    assert reads(3) == reads(3)
    assert len({tuple(reads(s)) for s in range(8)}) > 1


def test_a_policy_that_is_not_reset_still_starts_each_episode_fresh():
    policy = RandomPhase2Policy(seed=0)
    env = srelib.IncidentEnv()
    for _ in range(2):
        obs, _ = env.reset(task="memory_leak", pool="B", seed=0)
        first = policy(obs, obs["current_phase"], "memory_leak")
        assert first["action_type"] == "list_dir"
        env.step(first)


def test_heuristic_diagnoses_the_easy_incident_and_hands_over_its_evidence():
    trajectory, info = run(HeuristicPhase1Policy(), "memory_leak", pool="C", seed=0)
    declared = next(r for r in trajectory if r["action"]["action_type"] == "declare_root_cause")
    assert declared["action"]["parameters"]["service"] == "orders"
    assert declared["action"]["parameters"]["fault_class"] == "memory_leak"
    assert any(r["action"] == {"action_type": "rollback_deploy", "target_service": "orders",
                               "parameters": {}} for r in trajectory)
    belief = next(r for r in trajectory if r["action"]["action_type"] == "transition_to_phase2")
    belief = belief["effect"]["belief"]
    assert belief["suspected_service"] == "orders" and belief["service_confidence"] >= 0.5
    assert "recent deploy" in belief["reasoning"]


def test_heuristic_is_less_confident_without_evidence():
    def handover(task):
        trajectory, _ = run(HeuristicPhase1Policy(), task, pool=joint_pool(task), seed=0)
        return next(r["effect"]["belief"] for r in trajectory
                    if r["action"]["action_type"] == "transition_to_phase2")

    noop, leak = handover("circuit_breaker_noop"), handover("memory_leak")
    assert noop["suspected_fault_class"] == "none"
    assert noop["service_confidence"] < leak["service_confidence"]
    assert noop["evidence_gaps"]


def test_heuristic_scores_vary_across_seeds_on_most_tasks():
    # the policy is deterministic: the spread comes from the seeded incident (fooled on some seeds)
    varying = 0
    for task in TASKS:
        finals = {run(HeuristicPhase1Policy(), task, mode="p1_only", seed=s)[1]["score"]["final"]
                  for s in range(10)}
        varying += len(finals) > 1
    assert varying >= len(TASKS) * 0.6


def test_heuristic_is_imperfect():
    """Good on some tasks, lost on others (it reads what an engineer reads first; since the
    surface stopped naming the culprit (issue 28) its best task is no longer above 0.8)."""
    finals = [run(HeuristicPhase1Policy(), t, mode="p1_only", seed=0)[1]["score"]["final"]
              for t in TASKS]
    assert max(finals) > 0.7 and min(finals) < 0.5


def test_revert_proposes_the_reverse_of_the_bad_commit():
    from srelib.env.tasks.lookup import load_repo

    trajectory, info = run(RevertPhase2Policy(), "severity_inversion", pool="B", seed=0)
    patch = trajectory[-1]["action"]["parameters"]["diff"]
    bad = next(c for c in load_repo("orders_auth_client").commits if c.sha == "f8c9b13")
    assert patch == reverse_diff(bad.diff)
    assert info["score"]["patch"]["patch_applied"]


def test_a_blind_revert_loses_the_bad_commits_feature_and_resolves_nothing():
    for task in TASKS:
        score = run(RevertPhase2Policy(), task, mode="p2_only", seed=0)[1]["score"]
        if not srelib.get_scenario(task).needs_fix:
            assert score["repair"] == 1.0  # the handover says "none": no change declared
            continue
        patch = score["patch"]
        assert patch["patch_applied"] and not all(patch["PASS_TO_PASS"].values()), task
        assert patch["resolved"] == "no" and score["repair"] == 0.0, task


def test_revert_declares_no_change_when_the_handover_says_no_fault():
    trajectory, info = run(RevertPhase2Policy(), "circuit_breaker_noop", pool="B", seed=0)
    assert info["ended_by"] == "declare_no_change" and info["score"]["repair"] == 1.0


def test_revert_without_a_suspect_commit_searches_the_git_log():
    obs = {"current_phase": 2, "steps_taken": 1, "bad_commit_sha": None,
           "issue": "Checkout fails on the orders service after the last release.",
           "file_tree": ["README.md", "orders/handlers/batch.py", "tests/test_batch.py"]}
    policy = RevertPhase2Policy()
    assert policy(obs, 2, "memory_leak")["parameters"] == {"n_commits": 5, "path": "orders"}
    log = {**obs, "steps_taken": 2, "action_result": {"commits": [{"sha": "a3f7c91"}]}}
    assert policy(log, 2, "memory_leak")["parameters"] == {"commit_sha": "a3f7c91"}


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def test_reverse_diff_undoes_a_real_git_commit(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.com")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "keep.py").write_text("a = 1\nb = {}\nc = 3\n")
    (tmp_path / "gone.py").write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "keep.py").write_text("a = 1\nb = {'k': 2}\nc = 3\nd = 4\n")
    (tmp_path / "gone.py").unlink()
    (tmp_path / "new.py").write_text("y = 2\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "change")
    forward = _git(tmp_path, "show", "--format=", "HEAD")
    backward = reverse_diff(forward)
    assert reverse_diff(backward) == forward
    (tmp_path / "undo.patch").write_text(backward)
    _git(tmp_path, "apply", "undo.patch")
    assert (tmp_path / "keep.py").read_text() == "a = 1\nb = {}\nc = 3\n"
    assert (tmp_path / "gone.py").read_text() == "x = 1\n"
    assert not (tmp_path / "new.py").exists()


class SeedStyleScripted:
    """The seed's scripted policies: ``reset()`` with no arguments."""

    def __init__(self):
        self.resets = 0

    def reset(self):
        self.resets += 1

    def __call__(self, observation, phase, task_name):
        return {"action_type": "declare_no_change", "parameters": {}}


class SeedStyleChat:
    """The seed's chat policies: ``reset(task_name)``."""

    def __init__(self):
        self.task = None

    def reset(self, task_name):
        self.task = task_name

    def __call__(self, observation, phase, task_name):
        return {"action_type": "declare_no_change", "parameters": {}}


def test_composite_routes_by_phase_and_forwards_reset():
    scripted, chat = SeedStyleScripted(), SeedStyleChat()
    composite = CompositePolicy(scripted, chat)
    composite.reset(seed=4, task_name="memory_leak")
    assert scripted.resets == 1 and chat.task == "memory_leak"
    assert composite({}, 1, "t") == scripted({}, 1, "t")
    assert composite.name == "SeedStyleScripted+SeedStyleChat"
    assert not hasattr(composite, "act_batch")
    trajectory, info = run(CompositePolicy(HeuristicPhase1Policy(), RevertPhase2Policy()),
                           "memory_leak", pool="C", seed=0)
    phases = {r["phase"] for r in trajectory}
    assert phases == {1, 2}


class BatchRecorder:
    """A batch policy that answers with the lane it was given, to check the routing."""

    def __init__(self, tag):
        self.tag, self.seen = tag, []

    def __call__(self, observation, phase, task_name):
        return self.act_batch([(observation, phase, task_name)])[0]

    def act_batch(self, items):
        self.seen.append([len(item) for item in items])
        return [{"action_type": self.tag, "lane": item[3] if len(item) == 4 else None}
                for item in items]


def test_composite_act_batch_splits_by_phase_and_keeps_order_and_lanes():
    one, two = BatchRecorder("p1"), BatchRecorder("p2")
    composite = CompositePolicy(one, two)
    items = [({}, 1, "t", "a"), ({}, 2, "t", "b"), ({}, 1, "t")]
    actions = composite.act_batch(items)
    assert [a["action_type"] for a in actions] == ["p1", "p2", "p1"]
    assert [a["lane"] for a in actions] == ["a", "b", 2]


def test_every_policy_has_a_name_and_a_seeded_reset():
    for policy in (NullPhase1Policy(), RandomPhase2Policy(), OracleP1ThenRandomP2Policy(),
                   HeuristicPhase1Policy(), RevertPhase2Policy(),
                   CompositePolicy(NullPhase1Policy(), RevertPhase2Policy())):
        assert isinstance(policy.name, str) and policy.name
        policy.reset(seed=3, task_name="memory_leak")
        policy.reset()


def test_reference_policy_is_exported_lazily():
    from srelib.policies import ReferencePolicy

    assert callable(ReferencePolicy)
    with pytest.raises(AttributeError, match="NoSuchPolicy"):
        getattr(importlib.import_module("srelib.policies"), "NoSuchPolicy")


# ── prompts ─────────────────────────────────────────────────────────────────────────────────

def big_observation(phase=1):
    env = srelib.IncidentEnv()
    obs, _ = env.reset(task="memory_leak", pool="C", seed=0)
    obs, *_ = env.step({"action_type": "query_logs", "target_service": "orders",
                        "parameters": {"limit": 50}})
    if phase == 2:
        obs = {**obs, "current_phase": 2, "valid_actions": ["read_file", "propose_patch"],
               "action_result": {"content": "x = 1\n" * 5000}, "bad_commit_sha": "a3f7c91"}
    return obs


@pytest.mark.parametrize("budget", [600, 2000, 6000])
def test_render_fits_its_budget_and_never_drops_the_valid_actions(budget):
    obs = big_observation()
    text = render_observation(obs, budget)
    fixed = len(render_observation({**obs, "action_result": {}}, 10**6))
    assert len(text) <= max(budget, fixed) + 400
    for service in SERVICES:
        assert f"{service}" in text.split("VALID ACTIONS:")[1]
    assert "Phase 1 (operations)" in text
    if budget < 6000:
        assert "rows cut ...]" in text  # 50 log lines do not fit: the middle ones go


def test_phase2_render_cuts_large_files_in_the_middle():
    text = render_observation(big_observation(phase=2), 3000)
    assert "Phase 2 (code)" in text and "- propose_patch" in text and "a3f7c91" in text
    assert "characters cut ...]" in text and text.count("x = 1") < 1000


def test_cut_middle_keeps_both_ends_and_marks_the_cut():
    text = "HEAD" + "." * 5000 + "TAIL"
    cut = cut_middle(text, 200)
    assert cut.startswith("HEAD") and cut.endswith("TAIL") and len(cut) <= 200
    assert CUT_MARK.split("{n}")[0] in cut
    assert cut_middle("short", 200) == "short"


def test_system_prompt_carries_the_action_and_belief_schemas():
    for action in ACTION_SPECS:
        assert action.value in SYSTEM_PROMPT
    for name in BELIEF_FIELDS:
        assert name in SYSTEM_PROMPT
    assert "root_cause: str" in SYSTEM_PROMPT and "commit_sha: str" in SYSTEM_PROMPT


def test_tools_and_prompt_carry_every_declared_bound_and_choice():
    from srelib.env.actions import BELIEF_PARAMS
    from srelib.policies.llm.tools import BELIEF_SCHEMA, tool_definitions

    tools = {t["function"]["name"]: t["function"]["parameters"]["properties"]
             for t in tool_definitions()}
    prompt = SYSTEM_PROMPT.splitlines()
    for action, spec in ACTION_SPECS.items():
        line = next(line for line in prompt if line.startswith(f"- {action.value}"))
        for name, param in spec.params.items():
            schema = tools[action.value][name]
            assert (schema.get("minimum"), schema.get("maximum"), schema.get("default")) == \
                (param.minimum, param.maximum, param.default), (action, name)
            assert schema.get("enum") == (list(param.choices) if param.choices else None)
            assert schema["description"].startswith(param.description)
            if param.minimum is not None and param.maximum is not None:
                assert f"{name}?: int {param.minimum}-{param.maximum}" in line
                assert f"({param.minimum}-{param.maximum})" in param.description
            if param.choices is not None:
                assert "|".join(param.choices) in line
    assert tuple(BELIEF_PARAMS) == BELIEF_FIELDS
    declared = {n: p.default for n, p in BELIEF_PARAMS.items() if p.default is not None}
    assert declared == {n: v for n, v in asdict(BeliefState()).items() if n in declared}
    for name, param in BELIEF_PARAMS.items():
        schema = BELIEF_SCHEMA["properties"][name]
        assert (schema.get("minimum"), schema.get("maximum")) == (param.minimum, param.maximum)
        assert [v for v in schema.get("enum", []) if v is not None] == list(param.choices or [])
        assert f"- {name}: {param.description}" in prompt


def test_history_trimming_keeps_the_system_prompt_and_the_incident():
    transcript = Transcript(obs_chars=1500, max_history=3, max_chars=9000)
    obs = big_observation()
    for step in range(12):
        transcript.add_observation({**obs, "steps_taken": step})
        transcript.add_reply('{"action_type": "view_alerts"}')
    transcript.add_observation({**obs, "steps_taken": 12})
    messages = transcript.messages()
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert messages[1]["content"].startswith("INCIDENT [SEV2]")
    assert "steps_taken=12" in messages[-1]["content"]
    assert len(messages) <= 2 + 2 * 3
    roles = [m["role"] for m in messages[1:]]
    assert roles == ["user", "assistant"] * ((len(roles) - 1) // 2) + ["user"]
    # An unanswered turn is replaced, never doubled (templates need alternating roles).
    transcript.add_observation({**obs, "steps_taken": 13})
    assert [m["role"] for m in transcript.messages()][-2:] == ["assistant", "user"]


def test_history_is_trimmed_in_blocks_so_turns_mostly_append():
    transcript = Transcript(obs_chars=300, max_history=4, max_chars=10**6)
    rewrites, previous = [], None
    for step in range(13):
        transcript.add_observation({"steps_taken": step, "valid_actions": ["view_alerts"]})
        messages = transcript.messages()
        assert len(messages) <= 2 + 2 * 4 and f"steps_taken={step}" in messages[-1]["content"]
        if previous is not None and messages[:len(previous)] != previous:
            rewrites.append(step)
        transcript.add_reply(f"reply {step}")
        previous = transcript.messages()
    # Over the limit, the two oldest pairs go at once; between trims the prompt only appends
    # (which keeps a KV cache or a server's prefix cache valid).
    assert rewrites == [5, 8, 11]
