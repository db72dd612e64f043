"""EpisodeStepper, TrajectoryViewer and to_html, driven through their API on the real env."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("ipywidgets")

import srelib  # noqa: E402
from srelib.env.actions import PARSE_ERROR  # noqa: E402
from srelib.results import Episode  # noqa: E402
from srelib.runners.rollout import run_episode  # noqa: E402
from srelib.widgets import MANUAL, EpisodeStepper, TrajectoryViewer, to_html  # noqa: E402


class MemoryLeakScript:
    """A scripted player of memory_leak that touches every kind of result the panes render."""

    name = "memory-leak-script"

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.calls = 0

    def reset(self, seed=None, task_name=None):
        self.calls = 0

    def __call__(self, observation, phase, task_name):
        self.calls += 1
        time.sleep(self.delay)
        if phase == 1:
            script = [
                {"action_type": "view_alerts"},
                {"action_type": "check_metrics", "target_service": "orders"},
                {"action_type": "query_logs", "target_service": "orders"},
                {"action_type": "check_deploy_history", "target_service": "orders"},
                {"action_type": "rollback_deploy", "target_service": "orders"},
                {"action_type": "declare_root_cause",
                 "parameters": {"root_cause": "memory leak in orders from the latest deploy",
                                "service": "orders", "fault_class": "memory_leak"}},
                {"action_type": "transition_to_phase2", "parameters": {"belief": {
                    "suspected_service": "orders", "suspected_fault_class": "memory_leak",
                    "service_confidence": 0.9, "fault_confidence": 0.8,
                    "decision": "transition"}}},
            ]
            return script[min(observation["steps_taken"], len(script) - 1)]
        tree = observation["file_tree"]
        py = next(p for p in tree if p.endswith(".py"))
        script = [
            {"action_type": "list_dir", "parameters": {"path": "."}},
            {"action_type": "read_file", "parameters": {"path": py}},
            {"action_type": "get_git_log", "parameters": {}},
            {"action_type": "get_file_diff",
             "parameters": {"commit_sha": observation["bad_commit_sha"]}},
            {"action_type": "declare_no_change", "parameters": {"reason": "test script"}},
        ]
        p2_step = observation["steps_taken"] - 7  # phase 2 starts after the 7 steps above
        return script[min(max(p2_step, 0), len(script) - 1)]


def _pane(widget, name: str) -> str:
    return widget.panes.html[name].value


@pytest.fixture
def stepper():
    return EpisodeStepper(task="memory_leak", pool="C", seed=7, policies={})


def test_summary_text_is_what_a_notebook_shows_as_plain_text(stepper):
    text = repr(stepper)
    assert text.startswith("EpisodeStepper(task=memory_leak, pool=C, seed=7, step 0/")
    assert text.endswith("phase 1)")
    bundle = stepper._repr_mimebundle_()
    assert bundle["text/plain"] == text
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == stepper.ui.model_id
    assert len(text) <= 110


def test_initial_panes_show_the_incident_and_a_coloured_board(stepper):
    obs = stepper.obs
    assert obs["incident_title"] in _pane(stepper, "incident")
    assert _pane(stepper, "board").count('class="srl-svc ') == 7
    for service, status in obs["service_statuses"].items():
        assert f'srl-{status}" title="{service}: {status}"' in _pane(stepper, "board")
    assert "step 0/" in stepper.counter.value


def test_manual_mode_plays_an_action_from_the_form(stepper):
    assert stepper.policy_picker.value == MANUAL and stepper.policy is None
    assert list(stepper.form.picker.options) == stepper.obs["valid_actions"]
    stepper.form.picker.value = "query_logs:orders"
    assert set(stepper.form.fields) == {"level", "keyword", "limit"}
    stepper.form.fields["limit"].value = "5"
    assert stepper.form.action() == {"action_type": "query_logs", "target_service": "orders",
                                     "parameters": {"limit": 5}}
    stepper.step_button.click()
    assert stepper.obs["steps_taken"] == 1
    action_pane = _pane(stepper, "action")
    assert "query_logs \u2192 orders" in action_pane and "<h3>Logs (" in action_pane
    assert action_pane.count("srl-lv-") >= 2
    assert "step 1/" in stepper.counter.value and "step 1/" in repr(stepper)


def test_forms_follow_the_action_specs(stepper):
    stepper.form.picker.value = "declare_root_cause"
    fields = stepper.form.fields
    assert set(fields) == {"root_cause", "service", "fault_class"}
    assert "orders" in fields["service"].options and "memory_leak" in fields["fault_class"].options
    fields["root_cause"].value = "orders leaks memory"
    fields["service"].value = "orders"
    assert stepper.form.action() == {"action_type": "declare_root_cause", "target_service": None,
                                     "parameters": {"root_cause": "orders leaks memory",
                                                    "service": "orders"}}
    stepper.form.picker.value = "transition_to_phase2"
    stepper.form.fields["belief.suspected_service"].value = "orders"
    belief = stepper.form.action()["parameters"]["belief"]
    assert belief["suspected_service"] == "orders" and belief["decision"] == "transition"
    assert "suspected_fault_class" not in belief  # blank choices are left out


def test_invalid_actions_and_parse_failures_are_shown_plainly(stepper):
    stepper.step({"action_type": "query_logs", "target_service": "nowhere"})
    assert _pane(stepper, "action").count("srl-error") == 1 and "nowhere" in _pane(stepper, "action")
    assert _pane(stepper, "status") == ""  # each error is shown once, in the action pane
    stepper.step({"action_type": PARSE_ERROR, "parameters": {"reason": "no JSON object found"}})
    assert "no JSON object found" in _pane(stepper, "action")
    assert "srl-error" in _pane(stepper, "action")
    stepper.step({"action_type": "view_alerts"})
    assert _pane(stepper, "status") == "" and "<h3>Alerts (" in _pane(stepper, "action")


def test_picker_changes_start_a_new_episode(stepper):
    stepper.step({"action_type": "view_alerts"})
    stepper.seed_picker.value = 8
    assert stepper.obs["steps_taken"] == 0 and "seed=8" in repr(stepper)
    stepper.task_picker.value = "cascading_failure"
    assert stepper.info["task"] == srelib.task_id("cascading_failure")
    assert stepper.obs["incident_title"] in _pane(stepper, "incident")
    stepper.pool_picker.value = "B"
    assert stepper.obs["current_phase"] == 2
    assert "Belief handed over (oracle, pool B)" in _pane(stepper, "belief")


def test_a_full_episode_by_policy_renders_every_kind_of_result():
    stepper = EpisodeStepper(policy=MemoryLeakScript(), task="memory_leak", pool="C", seed=7,
                             policies={})
    seen = []
    while not stepper.done:
        assert stepper.step() is not None
        seen.append(_pane(stepper, "action"))
    everything = "".join(seen)
    for marker in ("<h3>Alerts (", "<svg", "<h3>Logs (", "Deploy history", "Directory .",
                   'class="srl-ln"', "Git log (", 'class="srl-diff-'):
        assert marker in everything, marker
    assert "suspected_service" in _pane(stepper, "belief")
    assert "Score: " in _pane(stepper, "score")
    assert ", done, score " in repr(stepper)
    assert stepper.step() is None and "Reset" in _pane(stepper, "status")


def test_run_to_end_works_in_a_thread_and_can_be_stopped():
    policy = MemoryLeakScript(delay=0.05)
    stepper = EpisodeStepper(policy=policy, task="memory_leak", pool="C", seed=7, policies={})
    thread = stepper.run_to_end()
    assert thread is not None and thread is not threading.current_thread()
    time.sleep(0.12)  # the kernel thread is free meanwhile
    assert stepper.running and stepper.stop_button.disabled is False
    assert stepper.step_button.disabled and "thinking\u2026" in _pane(stepper, "status")
    assert stepper.step() is None  # refused while running
    stepper.stop_button.click()
    assert stepper.wait(5)
    stopped_at = stepper.obs["steps_taken"]
    assert not stepper.done and 0 < stopped_at < 12
    assert f"Stopped at step {stopped_at}" in _pane(stepper, "status")
    assert not stepper.step_button.disabled
    stepper.run_button.click()
    assert stepper.wait(10) and stepper.done
    assert "Score: " in _pane(stepper, "score")


def test_the_scripted_baselines_are_offered_and_run_to_the_end():
    stepper = EpisodeStepper(task="memory_leak", pool="C", seed=3)
    assert {"heuristic", "heuristic-revert", "reference"} <= set(stepper.policy_picker.options)
    stepper.policy_picker.value = "heuristic-revert"
    assert stepper.manual_box.layout.display == "none"  # the form is for manual play only
    stepper.run_button.click()
    assert stepper.wait(60) and stepper.done
    assert "Score: " in _pane(stepper, "score") and "Belief handed over" in _pane(stepper, "belief")
    assert stepper.env.trajectory[-1]["phase"] == 2


def test_a_failing_policy_is_reported_not_raised():
    def broken(observation, phase, task_name):
        raise RuntimeError("model endpoint unreachable")

    stepper = EpisodeStepper(policy=broken, task="memory_leak", pool="C", seed=7, policies={})
    assert stepper.step() is None
    assert "RuntimeError: model endpoint unreachable" in _pane(stepper, "status")
    stepper.run_to_end()
    assert stepper.wait(5) and stepper.obs["steps_taken"] == 0


def test_bad_constructor_arguments_name_the_valid_choices():
    with pytest.raises(ValueError, match="memory_leak"):
        EpisodeStepper(task="nope")
    with pytest.raises(ValueError, match="valid"):
        EpisodeStepper(pool="Z")


@pytest.fixture(scope="module")
def episode() -> Episode:
    from srelib.env.core import IncidentEnv

    return run_episode(IncidentEnv(), MemoryLeakScript(), task="memory_leak", pool="C", seed=7)


def test_viewer_moves_through_records_with_slider_and_play(episode):
    viewer = TrajectoryViewer(episode)
    last = len(episode.steps) - 1
    assert viewer.slider.max == last and viewer.play.max == last
    assert viewer._link.source == (viewer.play, "value")
    assert viewer._link.target == (viewer.slider, "value")
    assert viewer.note is None and all(obs is not None for obs in viewer.observations)
    assert "<h3>Alerts (" in _pane(viewer, "action") and _pane(viewer, "score") == ""
    viewer.slider.value = 1
    assert "<svg" in _pane(viewer, "action")  # the metrics of step 2
    assert viewer.timeline.value.count('fill="none" stroke="#1f2328"') == 1
    viewer.slider.value = last
    assert "Score: " in _pane(viewer, "score") and "suspected_service" in _pane(viewer, "belief")
    steps = episode.steps[-1]["step"]  # numbered as the stepper numbers them
    assert repr(viewer) == (f"TrajectoryViewer(policy={episode.policy}, task=memory_leak, "
                            f"pool=C, seed=7, step {steps}/40, final {episode.final:.3f})")
    assert f"step {steps}/40" in viewer.counter.value
    viewer.slider.value = 0
    assert "<b>step 1/40</b>" in viewer.counter.value
    assert viewer._repr_mimebundle_()["text/plain"] == repr(viewer)
    with pytest.raises(ValueError, match="index must be in"):
        viewer.show(last + 1)


def test_viewer_loads_dicts_json_files_and_run_directories(episode, tmp_path):
    (tmp_path / "one.json").write_text(episode.to_json())
    run = tmp_path / "run"
    run.mkdir()
    other = Episode.from_dict({**episode.to_dict(), "seed": 8, "policy": "second"})
    (run / "episodes.jsonl").write_text(episode.to_json() + "\n" + other.to_json() + "\n")
    for source in (episode.to_dict(), tmp_path / "one.json", str(run),
                   run / "episodes.jsonl"):
        assert TrajectoryViewer(source).episode == episode.to_dict()
    assert TrajectoryViewer(run, index=1).episode["policy"] == "second"
    with pytest.raises(ValueError, match="out of range"):
        TrajectoryViewer(run, index=5)
    with pytest.raises(ValueError, match="expected an Episode"):
        TrajectoryViewer(42)


def test_to_html_is_self_contained_with_rich_results(episode):
    page = to_html(episode)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    for marker in ("<h3>Alerts (", "<polyline", "Deploy history", 'class="srl-ln"',
                   'class="srl-diff-', "Belief handed over", "Score: "):
        assert marker in page, marker
    assert page.count("<details><summary>step ") == len(episode.steps)


def test_to_html_flags_a_trajectory_that_no_longer_replays(episode):
    data = episode.to_dict()
    data["steps"] = [dict(r) for r in data["steps"]]
    data["steps"][2]["reward"] += 1.0
    page = to_html(data)
    assert "replay diverged: record 2 (step 3) differs from the replay in reward" in page
    assert page.count("<h3>Alerts (") == 1  # only the records before the divergence


_STABLE_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_widgets import MemoryLeakScript
from srelib.env.core import IncidentEnv
from srelib.runners.rollout import run_episode
from srelib.widgets import to_html
episode = run_episode(IncidentEnv(), MemoryLeakScript(), task="memory_leak", pool="C", seed=7)
sys.stdout.write(to_html(episode))
"""


def test_to_html_is_byte_identical_across_processes():
    script = _STABLE_SCRIPT.format(tests=os.path.dirname(__file__))
    digests = set()
    for hash_seed in ("0", "12345"):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed}, timeout=120)
        digests.add(hashlib.sha256(out.stdout).hexdigest())
        assert b"<polyline" in out.stdout
    assert len(digests) == 1


def test_episode_json_round_trip_keeps_the_page(episode):
    again = Episode.from_json(json.dumps(episode.to_dict()))
    assert to_html(again) == to_html(episode)


def test_every_action_gets_a_form_from_its_spec(stepper):
    from srelib.env.actions import ACTION_SPECS
    from srelib.env.belief import BELIEF_FIELDS

    for action_type, spec in ACTION_SPECS.items():
        stepper.form.set_valid_actions([action_type.value])
        expected = {f"belief.{f}" for f in BELIEF_FIELDS} if "belief" in spec.params \
            else set(spec.params)
        assert set(stepper.form.fields) == expected, action_type
        assert stepper.form.action()["action_type"] == action_type.value


@pytest.fixture
def phase2_stepper():
    return EpisodeStepper(task="memory_leak", pool="B", seed=7, policies={})


def test_manual_form_errors_spend_no_budget_and_keep_the_values(stepper, phase2_stepper):
    stepper.form.picker.value = "declare_root_cause"
    stepper.form.fields["service"].value = "orders"
    assert stepper.step() is None
    assert stepper.obs["steps_taken"] == 0 and stepper.env.trajectory == []  # nothing stepped
    status = _pane(stepper, "status")
    assert status.count("srl-error") == 1
    assert status.count("declare_root_cause needs parameters.root_cause") == 1
    assert stepper.form.fields["service"].value == "orders"  # what was chosen stays
    stepper.form.fields["root_cause"].value = "orders leaks memory"
    stepper.step_button.click()
    assert stepper.obs["steps_taken"] == 1 and _pane(stepper, "status") == ""
    form = phase2_stepper.form
    form.picker.value = "read_file"
    form.fields["path"].value = "orders/models.py"
    for typed, problem in (("five", "parameters.start_line must be int, got str"),
                           ("0", "parameters.start_line must be at least 1")):
        form.fields["start_line"].value = typed
        phase2_stepper.step_button.click()
        assert problem in _pane(phase2_stepper, "status")
        assert phase2_stepper.obs["steps_taken"] == 0 and form.fields["start_line"].value == typed


def test_values_survive_a_failed_step(phase2_stepper):
    form = phase2_stepper.form
    form.picker.value = "read_file"
    form.fields["path"].value = "no/such_file.py"
    phase2_stepper.step_button.click()
    assert phase2_stepper.obs["steps_taken"] == 1 and "not found" in _pane(phase2_stepper, "action")
    assert form.fields["path"].value == "no/such_file.py"


def test_form_fields_follow_the_parameter_declarations(stepper):
    from srelib.env.actions import ACTION_SPECS, BELIEF_PARAMS

    for action_type, spec in ACTION_SPECS.items():
        stepper.form.set_valid_actions([action_type.value])
        for name, param in spec.params.items():
            if name == "belief":
                continue
            field = stepper.form.fields[name]
            if param.choices is not None:
                assert [o for o in field.options if o] == list(param.choices), name
            if param.type is int and param.maximum is not None:
                assert (field.min, field.max, field.value) == (param.minimum, param.maximum,
                                                               param.default), name
                field.value = param.maximum + 1  # the box holds to the declared bound
                assert field.value == param.maximum
    stepper.form.set_valid_actions(["transition_to_phase2"])
    for name, param in BELIEF_PARAMS.items():
        field = stepper.form.fields[f"belief.{name}"]
        if param.choices is not None:
            assert [o for o in field.options if o] == list(param.choices), name
        if param.type is float:
            assert (field.min, field.max) == (param.minimum, param.maximum), name


def test_a_policy_has_one_name_in_the_picker():
    import srelib.policies as policies

    composite = policies.CompositePolicy(policies.HeuristicPhase1Policy(),
                                         policies.RevertPhase2Policy())
    assert composite.name == "heuristic_p1+revert_p2"
    stepper = EpisodeStepper(policy=composite, task="memory_leak", pool="C", seed=3)
    options = list(stepper.policy_picker.options)
    assert stepper.policy_picker.value == "heuristic-revert" and stepper.policy is composite
    assert "heuristic_p1+revert_p2" not in options and options.count("heuristic-revert") == 1


def test_the_viewer_draws_each_pane_once(tmp_path):
    from srelib.policies.registry import scripted_policy

    from srelib.env.core import IncidentEnv

    episode = run_episode(IncidentEnv(), scripted_policy("heuristic-revert")(), "memory_leak",
                          pool="C", seed=0)
    index = next(i for i, r in enumerate(episode.steps)
                 if r["action"]["action_type"] == "rollback_deploy")
    viewer = TrajectoryViewer(episode)
    viewer.show(index)
    action = _pane(viewer, "action")
    assert "srl-board" not in action and _pane(viewer, "board").count("srl-svc ") == 7
    outcome = viewer.observations[index]["action_message"]
    assert outcome.startswith("Rolled back") and action.count(outcome) == 1


def test_an_oracle_picked_after_the_episode_began_is_handed_the_answer():
    """The score-pane fixture's path: the reference policy, built when it is picked, plays the
    episode in progress to its end."""
    stepper = EpisodeStepper(task="memory_leak", pool="C", seed=3)
    stepper.policy_picker.value = "reference"
    stepper.run_to_end()
    assert stepper.wait(120) and stepper.done
    assert stepper.info["score"]["final"] > 0.9
