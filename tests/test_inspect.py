"""srelib's Inspect AI task run by Inspect itself, offline: ``inspect_ai.eval`` (what ``inspect eval
srelib/integrations/inspect_ai.py`` calls) with Inspect's ``mockllm/model``, whose scripted
replies are tool calls. The episode is the one the same actions play in process, the score is
srelib's grader's, and Inspect writes a log its viewer reads.

mockllm's scripted outputs carry their token usage: without it mockllm counts tokens with
tiktoken's o200k_base encoding, which it downloads on first use (no network here); the test of
the ``inspect eval`` command replaces that estimate."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

import inspect_ai  # noqa: E402
from inspect_ai.log import list_eval_logs, read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

import srelib  # noqa: E402
from srelib.env.grading.score import score_trajectory  # noqa: E402
from srelib.integrations.inspect_ai import incident_samples, srelib_incidents  # noqa: E402
from srelib.policies import ReferencePolicy, call_reset  # noqa: E402

TASK, POOL, SEED = "memory_leak", "C", 0
ROOT = Path(__file__).resolve().parents[1]


def _with_usage(output: ModelOutput) -> ModelOutput:
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


def _reference_episode():
    """The reference policy's actions on the sample, and the episode's score in process."""
    env, policy = srelib.IncidentEnv(), ReferencePolicy()
    observation, _ = env.reset(task=TASK, pool=POOL, seed=SEED)
    call_reset(policy, seed=SEED, task_name=TASK)
    actions, done, info = [], False, {}
    while not done:
        action = policy(observation, observation["current_phase"], TASK)
        actions.append(action)
        observation, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    return actions, info["score"]


def _tool_call(action: dict) -> ModelOutput:
    arguments = dict(action.get("parameters") or {})
    if action.get("target_service"):
        arguments["target_service"] = action["target_service"]
    return _with_usage(ModelOutput.for_tool_call("mockllm", action["action_type"], arguments))


def _run(outputs, tmp_path):
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = inspect_ai.eval(srelib_incidents(tasks=TASK, pool=POOL, seeds=1), model=model,
                            log_dir=str(tmp_path), display="none")
    return log


def test_inspect_plays_the_episode_through_tool_calls_and_scores_it_with_srelibs_grader(tmp_path):
    actions, expected = _reference_episode()
    log = _run([_tool_call(a) for a in actions], tmp_path)
    assert log.status == "success"
    [sample] = log.samples
    [score] = sample.scores.values()
    assert score.value == expected["final"] > 0.5
    assert {k: score.metadata[k] for k in expected} == dict(expected)
    assert score.answer == f"{len(actions)} steps"
    calls = [c.function for m in sample.messages if m.role == "assistant" for c in m.tool_calls or []]
    assert calls == [a["action_type"] for a in actions]
    assert sum(m.role == "tool" for m in sample.messages) == len(actions)
    [path] = list_eval_logs(str(tmp_path))  # the log Inspect's viewer opens
    assert read_eval_log(path).results.scores[0].metrics["mean"].value == expected["final"]


def test_a_reply_without_a_tool_call_ends_the_sample_scored_as_it_stands(tmp_path):
    log = _run([_with_usage(ModelOutput.from_content("mockllm", "I would rather not."))], tmp_path)
    [sample] = log.samples
    [score] = sample.scores.values()
    assert score.answer == "0 steps"
    assert score.value == score_trajectory(TASK, "joint", [])["final"]


def test_the_samples_are_the_task_specs_episodes():
    samples = incident_samples("classic", "C", seeds=2)
    assert len(samples) == 2 * len([t for t in srelib.TASKS if srelib.POOLS["C"].accepts(t)])
    assert samples[0].id == f"{samples[0].metadata['task']}:C:0" and "INCIDENT" in samples[0].input
    for bad in ({"pool": "Z"}, {"seeds": 0}, {"tasks": "heldout_aliased_severity"}):
        with pytest.raises(ValueError):
            incident_samples(**{"tasks": "classic", "pool": "C", "seeds": 1, **bad})


def test_the_inspect_eval_command_runs_the_task_file_with_mockllm(tmp_path):
    """``inspect eval srelib/integrations/inspect_ai.py --model mockllm/model``, Inspect's own
    CLI, with one change: mockllm's token estimate counts characters instead of downloading
    tiktoken's encoding. mockllm's default reply calls no tool, so the sample ends at once."""
    script = textwrap.dedent(f"""
        import sys
        import inspect_ai.model._model as model
        model.count_text_tokens = lambda text: max(1, len(text) // 4)
        from inspect_ai._cli.main import main
        sys.argv = ["inspect", "eval", "srelib/integrations/inspect_ai.py", "--model",
                    "mockllm/model", "-T", "tasks={TASK}", "-T", "pool={POOL}",
                    "--log-dir", {str(tmp_path)!r}, "--display", "none"]
        main()
    """)
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    [path] = list_eval_logs(str(tmp_path))
    log = read_eval_log(path)
    assert log.status == "success"
    assert log.eval.task_args == {"tasks": TASK, "pool": POOL, "seeds": 1, "max_turns": 60}
    [sample] = log.samples
    assert sample.id == f"{srelib.task_id(TASK)}:{POOL}:0" and sample.output.completion.startswith("Default output")
    assert sample.scores["episode_score"].answer == "0 steps"
