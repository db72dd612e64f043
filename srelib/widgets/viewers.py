"""Notebook widgets: step through an episode live, replay a saved one, or render it statically.

* :class:`EpisodeStepper` plays an incident: pick a task, pool, seed and policy (or play it
  yourself through a form built from ``actions.ACTION_SPECS``), then Reset, Step or Run to end.
  Run to end works in a background thread, so the kernel stays free while a slow policy thinks.
* :class:`TrajectoryViewer` replays a saved :class:`~srelib.results.store.Episode` with a slider and a
  Play control, over the same panes, plus a phase timeline with per-step rewards.
* :func:`to_html` writes an episode as one static, self-contained, deterministic HTML page.

Only core ipywidgets are used (they work in Colab without a custom widget manager), and
ipywidgets is imported when a widget is built, never at module import. Every widget's display
data carries a one-line ``text/plain`` summary that nbval can compare.
"""

from __future__ import annotations

import json
import threading
from html import escape
from pathlib import Path
from typing import Any, Callable

from srelib.widgets import render
from srelib.env.actions import ACTION_SPECS, BELIEF_PARAMS, ActionType, clean_parameters
from srelib.env.records import handoff
from srelib.episode import EpisodeRun, EpisodeSpec, EpisodeSteps, advance, episode_steps

MANUAL = "manual"
#: Widths shared by the pickers so the control rows line up.
_PICKER_WIDTH = "210px"


# ---------------------------------------------------------------- replaying episodes

def replay(episode: dict) -> tuple[dict | None, list[dict | None], str | None]:
    """What a stored episode's agent saw, from :func:`srelib.verify_episode`'s replay:
    ``(reset_observation, observations, note)``, one observation per record, None from the
    first record that does not replay (``note`` then says where)."""
    from srelib.results.verify import verify_episode

    check = verify_episode(episode)
    note = None if check.records_match else (
        f"replay diverged: {check.problems[0]}; later steps show the recorded trajectory only")
    return check.first_observation, list(check.observations), note


def to_html(episode: Any, index: int = 0, replay_results: bool = True) -> str:
    """A static, self-contained HTML page of an episode (inline CSS and SVG, no script).

    Accepts what :class:`TrajectoryViewer` accepts. With ``replay_results`` each step also
    shows its rendered result (alerts, logs, metrics, files, diffs), recovered by a
    deterministic replay. The page is byte-identical for a fixed seed.
    """
    from srelib.results.store import load_episode

    data = load_episode(episode, index)
    if not replay_results:
        return render.episode_html(data)
    first, observations, note = replay(data)
    return render.episode_html(data, observations, first, note)


# ---------------------------------------------------------------- shared bits

def _widgets():
    import ipywidgets

    return ipywidgets


def _policy_name(policy: Any) -> str:
    """The picker's name for ``policy``: its ``srelib eval`` name if it has one."""
    from srelib.policies.registry import registered_name

    try:
        registered = registered_name(policy)
    except ImportError:  # no srelib.policies: nothing is registered
        registered = None
    return registered or str(getattr(policy, "name", None) or type(policy).__name__)


def _default_policies() -> dict[str, Callable[[], Any]]:
    """Factories for the scripted policies of ``srelib eval`` (none if policies are missing)."""
    import importlib.util

    if importlib.util.find_spec("srelib.policies") is None:
        return {}
    from srelib.policies.registry import POLICY_CLASSES, scripted_policy

    return {name: scripted_policy(name) for name in POLICY_CLASSES}


class _Panes:
    """The HTML panes the stepper and the viewer share."""

    NAMES = ("incident", "board", "rewards", "status", "action", "belief", "score")

    def __init__(self):
        w = _widgets()
        self.style = w.HTML(render.style_tag())
        self.html = {name: w.HTML() for name in self.NAMES}
        for widget in self.html.values():
            widget.add_class("srl-html")  # lets wide content shrink to the pane (render.STYLE)

    def set(self, name: str, fragment: str) -> None:
        self.html[name].value = render.pane(fragment) if fragment else ""

    def boxes(self) -> list:
        """The incident column beside the handoff-and-score column; on a narrow screen the
        second goes below the first rather than squeezing its tables."""
        w = _widgets()
        h = self.html
        top = w.HBox([w.VBox([h["incident"], h["board"], h["rewards"], h["status"]],
                             layout=w.Layout(flex="3 1 400px", min_width="0")),
                      w.VBox([h["belief"], h["score"]],
                             layout=w.Layout(flex="2 1 340px", min_width="0"))],
                     layout=w.Layout(flex_flow="row wrap", width="100%"))
        return [self.style, top, h["action"]]


# ---------------------------------------------------------------- the manual action form

class _ActionForm:
    """Pick one of the valid actions and fill its parameters.

    Fields are built from the parameters' declarations (``ACTION_SPECS``, ``BELIEF_PARAMS``):
    bounded number boxes for bounded ints, dropdowns for closed vocabularies; the form is
    checked with the environment's own functions before anything is sent.
    """

    def __init__(self):
        w = _widgets()
        self.picker = w.Dropdown(description="action", options=[],
                                 layout=w.Layout(width="420px"))
        self.fields: dict[str, Any] = {}
        self.box = w.VBox()
        self._built_for = None
        self.picker.observe(lambda _change: self._rebuild(), names="value")

    def set_valid_actions(self, valid_actions: list[str]) -> None:
        keep = self.picker.value if self.picker.value in valid_actions else None
        self.picker.options = list(valid_actions)
        if valid_actions:
            self.picker.value = keep or valid_actions[0]
        self._rebuild()

    def _rebuild(self) -> None:
        """Build the fields of the picked action (kept, values and all, while it stays picked)."""
        w = _widgets()
        spec = self._spec()
        if spec is not None and spec is self._built_for:
            return
        self._built_for = spec
        self.fields = {}
        if spec is None:
            self.box.children = []
            return
        for name, param in spec.params.items():
            if name == "belief":
                self.fields.update(_belief_fields())
                continue
            self.fields[name] = _param_widget(name, param)
        doc = w.HTML(render.pane(f'<span class="srl-meta">{escape(spec.doc)}</span>'))
        self.box.children = [doc, *self.fields.values()]

    def _spec(self):
        action_type = str(self.picker.value or "").split(":", 1)[0]
        try:
            return ACTION_SPECS[ActionType(action_type)]
        except ValueError:
            return None

    def problems(self) -> list[str]:
        """Why the environment would refuse the form's action, as it would say it (the
        parameters go through ``clean_parameters``, a belief through ``coerce_belief``);
        empty when the form is ready to step."""
        from srelib.env.belief import coerce_belief

        if self._spec() is None:
            return ["pick an action"]
        action = self.action()
        params = action["parameters"]
        _, problem = clean_parameters(action["action_type"], params)
        if problem is None and "belief" in params:
            problem = coerce_belief(params["belief"])[1]
        return [] if problem is None else [problem]

    def action(self) -> dict:
        """The action the form describes now (blank optional fields are left out)."""
        action_type, _, target = str(self.picker.value or "").partition(":")
        params: dict[str, Any] = {}
        belief: dict[str, Any] = {}
        for name, widget in self.fields.items():
            value = _field_value(widget)
            if value is None:
                continue
            if name.startswith("belief."):
                belief[name.split(".", 1)[1]] = value
            else:
                params[name] = value
        if self._spec() is ACTION_SPECS[ActionType.TRANSITION_TO_PHASE2]:
            params["belief"] = belief
        return {"action_type": action_type, "target_service": target or None,
                "parameters": params}


#: Where the hand-over form starts: ready to hand over, confidences midway.
_BELIEF_FORM_START = {"decision": "transition", "service_confidence": 0.5, "fault_confidence": 0.5}


def _param_widget(name: str, param, start: Any = None, label: str = "110px") -> Any:
    """The field for one declared parameter: a checkbox, a dropdown of its choices (with a
    blank entry when it may be left out), a bounded number box, a slider, or a text box that
    shows the description. ``start`` overrides the declared default as the initial value."""
    w = _widgets()
    value = param.default if start is None else start
    kw = {"description": name, "layout": w.Layout(width="640px"),
          "style": {"description_width": label}}
    if param.type is bool:
        return w.Checkbox(description=name, value=bool(value), indent=False)
    if param.choices is not None:
        options = list(param.choices) if value is not None else ["", *param.choices]
        return w.Dropdown(options=options, value=value or "", **kw)
    bounded = param.minimum is not None and param.maximum is not None
    if param.type is int and bounded and value is not None:
        return w.BoundedIntText(value=value, min=param.minimum, max=param.maximum, **kw)
    if param.type is float and bounded:
        return w.FloatSlider(value=value or 0.0, min=param.minimum, max=param.maximum,
                             step=0.05, **kw)
    hint = param.description + ("" if param.default is None else f" (default {param.default})")
    hint += " \u2014 required" if param.required else ""
    hint += "; comma-separated" if param.type is list else ""
    cls = w.Textarea if name in ("diff", "root_cause", "reason", "reasoning") else w.Text
    widget = cls(placeholder=hint, **kw)
    widget.param_type = param.type
    return widget


def _belief_fields() -> dict[str, Any]:
    return {f"belief.{name}": _param_widget(name, param, _BELIEF_FORM_START.get(name), "160px")
            for name, param in BELIEF_PARAMS.items()}


def _field_value(widget) -> Any:
    """What the field puts in the action: None for a blank text or choice; an int field's
    text as a number when it reads as one (else as typed, for the check to name)."""
    value = widget.value
    if isinstance(value, str):
        if not value.strip():
            return None
        if getattr(widget, "param_type", str) is int:
            try:
                return int(value.strip())
            except ValueError:
                return value
    return value


class _Displayable:
    """Display as the widget tree, with a one-line summary as the ``text/plain`` part."""

    ui: Any

    def _repr_mimebundle_(self, **kwargs):
        data = dict(self.ui._repr_mimebundle_(**kwargs) or {})
        data["text/plain"] = repr(self)
        return data


# ---------------------------------------------------------------- live stepping

class EpisodeStepper(_Displayable):
    """Play an incident step by step, with a policy or by hand.

    ``policy`` (any Policy) is preselected in the policy picker; ``policies`` maps further
    picker names to zero-argument factories (default: the scripted policies that
    ``srelib eval`` knows by name). ``task`` is any task id, or a suite (``"generated"``) whose
    tasks in the pool's split the task picker then offers. The picker's ``manual`` entry makes
    Step take the action chosen in the form. Changing the task, pool or seed picker starts a
    new episode.
    """

    def __init__(self, policy: Any = None, task: str = "memory_leak", pool: str | None = "C",
                 seed: int | None = 7, mode: str | None = None,
                 policies: dict[str, Callable[[], Any]] | None = None):
        import random

        from srelib.env.catalog import resolve_tasks
        from srelib.env.core import IncidentEnv
        from srelib.env.pools import POOLS
        from srelib.env.scenarios import TASKS

        if pool is not None and pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; valid: {[None, *POOLS]}")
        chosen = resolve_tasks(task, POOLS[pool].split if pool else None)  # an id or a suite
        task, options = chosen[0], list(dict.fromkeys([*TASKS, *chosen]))
        w = _widgets()
        self.env = IncidentEnv()
        self.mode = mode
        self._factories: dict[str, Callable[[], Any] | None] = {MANUAL: None}
        self._policies: dict[str, Any] = {}
        if policy is not None:
            self._policies[_policy_name(policy)] = policy
            self._factories[_policy_name(policy)] = None
        self._factories.update(_default_policies() if policies is None else policies)
        if seed is None:
            seed = random.SystemRandom().randrange(2**31)

        picker = {"layout": w.Layout(width=_PICKER_WIDTH), "style": {"description_width": "50px"}}
        self.task_picker = w.Dropdown(description="task", options=options, value=task, **picker)
        self.pool_picker = w.Dropdown(description="pool", options=[("none", None)] +
                                      [(p, p) for p in POOLS], value=pool, **picker)
        self.seed_picker = w.IntText(description="seed", value=seed, **picker)
        self.policy_picker = w.Dropdown(description="policy", options=list(self._factories),
                                        value=_policy_name(policy) if policy else MANUAL, **picker)
        self.reset_button = w.Button(description="Reset", icon="refresh")
        self.step_button = w.Button(description="Step", icon="step-forward",
                                    button_style="primary")
        self.run_button = w.Button(description="Run to end", icon="fast-forward")
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self.counter = w.HTML()
        self.counter.add_class("srl-counter")
        self.form = _ActionForm()
        self.panes = _Panes()
        self.panes.html["board"].add_class("srl-board-pane")

        self.reset_button.on_click(lambda _b: self.reset())
        self.step_button.on_click(lambda _b: self.step())
        self.run_button.on_click(lambda _b: self.run_to_end())
        self.stop_button.on_click(lambda _b: self.stop())
        for p in (self.task_picker, self.pool_picker, self.seed_picker):
            p.observe(lambda _change: self.reset(), names="value")
        self.policy_picker.observe(lambda _change: self._show_form(), names="value")

        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.run: EpisodeRun | None = None
        self._steps: EpisodeSteps | None = None
        self.last_action: dict | None = None
        self.manual_box = w.VBox([self.form.picker, self.form.box])
        wrap = w.Layout(flex_flow="row wrap")  # narrow screens: controls wrap, not cut off
        self.ui = w.VBox([
            w.HBox([self.task_picker, self.pool_picker, self.seed_picker, self.policy_picker],
                   layout=wrap),
            w.HBox([self.reset_button, self.step_button, self.run_button, self.stop_button,
                    self.counter], layout=wrap),
            self.manual_box, *self.panes.boxes()])
        self.reset()

    # ---- state

    @property
    def task(self) -> str:
        return self.task_picker.value

    @property
    def obs(self) -> dict:
        """The observation the next action answers (the last one once the episode is over)."""
        return self.run.obs if self.run is not None else {}

    @property
    def info(self) -> dict:
        return self.run.info if self.run is not None else {}

    @property
    def done(self) -> bool:
        return self.run is not None and self.run.done

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def policy(self) -> Any:
        """The policy the picker selects (built on first use, and reset for the episode in
        progress), or None in manual mode."""
        name = self.policy_picker.value
        if name not in self._policies and self._factories.get(name) is not None:
            from srelib.runners.rollout import reset_policy

            built = self._policies[name] = self._factories[name]()
            if self.run is not None:
                reset_policy(built, self.seed_picker.value, self.run.task)
        return self._policies.get(name)

    def __repr__(self) -> str:
        obs, score = self.obs, self.info.get("score") or {}
        tail = ", done" if self.done else ""
        if isinstance(score.get("final"), (int, float)):
            tail += f", score {score['final']:.3f}"
        return (f"EpisodeStepper(task={self.task}, pool={self.pool_picker.value}, "
                f"seed={self.seed_picker.value}, step {obs.get('steps_taken')}/"
                f"{obs.get('max_steps')}, phase {obs.get('current_phase')}{tail})")

    # ---- actions

    def reset(self) -> dict:
        """Start a new episode with the pickers' task, pool and seed; returns the observation."""
        if self.running:
            self.stop()
            self.wait()
        from srelib.runners.rollout import reset_policy

        with self._lock:
            spec = EpisodeSpec.resolve(self.task, self.pool_picker.value, self.mode,
                                       self.seed_picker.value)
            self._steps = episode_steps(self.env, spec)
            self.run = advance(self._steps, first=True)
            self.last_action = None
            for policy in self._policies.values():
                reset_policy(policy, self.seed_picker.value, self.run.task)  # the opaque id
            self._render()
            self._status(self._failure())
            return self.obs

    def step(self, action: dict | None = None):
        """Take one step: ``action`` if given, else the policy's choice, else the form's.

        Returns Gymnasium's 5-tuple, or None when nothing was stepped (episode over, a run in
        progress, or the policy failed; the status line says which).
        """
        if self.running:
            self._status("Running to end: press Stop first.", error=True)
            return None
        if action is None:
            policy = self.policy
            if policy is None:
                problems = self.form.problems()
                if problems:  # nothing is stepped: no budget spent, the form keeps its values
                    self._status("Not stepped: " + "; ".join(problems) + ".", error=True)
                    return None
            action = self.form.action() if policy is None else self._ask(policy)
            if action is None:
                return None
        return self._apply(action)

    def run_to_end(self) -> threading.Thread | None:
        """Step with the selected policy in a background thread until the episode ends or
        Stop is pressed; panes update after every step. Returns the thread."""
        if self.running:
            return self._thread
        policy = self.policy
        if policy is None:
            self._status("Pick a policy to run to end; in manual mode press Step per action.",
                         error=True)
            return None
        self._stop.clear()
        self._set_running(True)
        self._thread = threading.Thread(target=self._run, args=(policy,), daemon=True,
                                        name="srelib-episode-stepper")
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Ask a running Run-to-end to stop after the step in progress."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a Run-to-end to finish; True when no run is in progress any more."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    # ---- internals

    def _run(self, policy: Any) -> None:
        try:
            while not self.done and not self._stop.is_set():
                self._status(f"thinking\u2026 ({_policy_name(policy)}, step "
                             f"{(self.obs.get('steps_taken') or 0) + 1})")
                action = self._ask(policy)
                if action is None or self._stop.is_set():
                    break
                self._apply(action)
        finally:
            self._set_running(False)
            if not self.done and self._stop.is_set():
                self._status(f"Stopped at step {self.obs.get('steps_taken')}.")

    def _ask(self, policy: Any) -> dict | None:
        try:
            return policy(self.obs, self.obs.get("current_phase"), self.run.task)
        except Exception as exc:  # a policy bug is shown, not raised into the event loop
            self._status(f"The policy raised {type(exc).__name__}: {exc}", error=True)
            return None

    def _apply(self, action: Any):
        with self._lock:
            if self.done:
                self._status("The episode is over: press Reset for a new one.", error=True)
                return None
            run = self.run = advance(self._steps, action)
            self.last_action = action if isinstance(action, dict) else {"action_type": action}
            self._render()
            self._status(self._failure())  # an invalid action's error is in the action pane
            return run.obs, run.reward, run.terminated, run.truncated, run.info

    def _failure(self) -> str:
        """The last line of an environment failure that ended the episode, else ''."""
        error = self.run.error if self.run is not None else None
        return f"The environment failed: {error.strip().splitlines()[-1]}" if error else ""

    def _render(self) -> None:
        obs, set_pane = self.obs, self.panes.set
        set_pane("incident", render.incident(obs))
        set_pane("board", render.status_board(obs.get("service_statuses")))
        set_pane("rewards", render.rewards(obs))
        set_pane("action", render.last_action(self.last_action, obs))
        set_pane("belief", render.belief(*handoff(self.env.trajectory)))
        set_pane("score", render.score(self.info.get("score")) if self.done else "")
        self.counter.value = render.pane(render.counter(
            obs.get("steps_taken"), obs.get("max_steps"), obs.get("current_phase"), self.done))
        self.form.set_valid_actions([] if self.done else list(obs.get("valid_actions") or []))
        self._show_form()

    def _show_form(self) -> None:
        self.manual_box.layout.display = "" if self.policy_picker.value == MANUAL else "none"

    def _status(self, text: str, error: bool = False) -> None:
        if not text:
            self.panes.set("status", "")
        elif error:
            self.panes.set("status", render.error_box(text))
        else:
            self.panes.set("status", f'<div class="srl-note">{escape(text)}</div>')

    def _set_running(self, running: bool) -> None:
        for control in (self.reset_button, self.step_button, self.run_button, self.task_picker,
                        self.pool_picker, self.seed_picker, self.policy_picker):
            control.disabled = running
        self.stop_button.disabled = not running
        self.stop_button.button_style = "danger" if running else ""


# ---------------------------------------------------------------- replay

class TrajectoryViewer(_Displayable):
    """Replay a saved episode: a slider and a Play control move through its records.

    ``episode_or_path`` is an Episode, an Episode dict, an episode JSON file, a run's
    ``episodes.jsonl`` or a run directory (``index`` picks the episode, 0 = first). Each
    record's result (alerts, logs, metrics, files, diffs) comes from a deterministic replay.
    """

    def __init__(self, episode_or_path: Any, index: int = 0, interval_ms: int = 700):
        from srelib.results.store import load_episode

        w = _widgets()
        self.episode = load_episode(episode_or_path, index)
        self.steps = list(self.episode.get("steps") or [])
        if not self.steps:
            raise ValueError("the episode has no steps to show")
        self.first_obs, self.observations, self.note = replay(self.episode)
        last = len(self.steps) - 1
        self.slider = w.IntSlider(description="record", min=0, max=last, value=0, readout=False,
                                  continuous_update=True, layout=w.Layout(width="480px"))
        self.counter = w.HTML()
        self.counter.add_class("srl-counter")
        self.play = w.Play(min=0, max=last, value=0, interval=interval_ms, description="Play")
        self._link = w.jslink((self.play, "value"), (self.slider, "value"))
        self.header = w.HTML(render.pane(render.episode_header(self.episode)))
        self.timeline = w.HTML()
        self.panes = _Panes()
        self.panes.html["board"].add_class("srl-board-pane")
        self.slider.observe(lambda change: self.show(change["new"]), names="value")
        self.ui = w.VBox([self.panes.style, self.header,
                          w.HBox([self.play, self.slider, self.counter]),
                          self.timeline, *self.panes.boxes()])
        self.show(0)

    @property
    def index(self) -> int:
        return self.slider.value

    def __repr__(self) -> str:
        final = (self.episode.get("score") or {}).get("final")
        score = f", final {final:.3f}" if isinstance(final, (int, float)) else ""
        return (f"TrajectoryViewer(policy={self.episode.get('policy')}, "
                f"task={_shown(self.episode.get('task'))}, pool={self.episode.get('pool')}, "
                f"seed={self.episode.get('seed')}, step {self.steps[self.index].get('step')}/"
                f"{self._max_steps()}{score})")

    def _max_steps(self) -> Any:
        """The episode's step budget, as its observations state it."""
        seen = [o for o in (self.first_obs, *self.observations) if o]
        return seen[0].get("max_steps") if seen else "?"

    def show(self, index: int) -> None:
        """Move to record ``index`` (the slider follows)."""
        if not 0 <= index < len(self.steps):
            raise ValueError(f"index must be in 0..{len(self.steps) - 1}, got {index}")
        if self.slider.value != index:
            self.slider.value = index  # the observer calls show again
            return
        record, obs = self.steps[index], self.observations[index]
        set_pane = self.panes.set
        self.timeline.value = render.pane(render.timeline(self.steps, current=index))
        ended = index == len(self.steps) - 1 and \
            bool(self.episode.get("terminated") or self.episode.get("truncated"))
        self.counter.value = render.pane(render.counter(record.get("step"), self._max_steps(),
                                                        record.get("phase"), ended))
        set_pane("incident", render.incident(obs or self.first_obs or {}))
        set_pane("board", render.status_board(record.get("statuses")))
        cumulative = sum(float(r.get("reward") or 0.0) for r in self.steps[:index + 1])
        set_pane("rewards", render.reward_line(record.get("phase"), record.get("reward"),
                                               cumulative, index == len(self.steps) - 1))
        set_pane("status", render.error_box(self.note) if self.note and obs is None else "")
        set_pane("action", render.step_record(record, obs, board=False))  # the board pane has it
        set_pane("belief", render.belief(*handoff(self.steps[:index + 1])))
        set_pane("score", render.score(self.episode.get("score")) if index == len(self.steps) - 1
                 else "")


def _shown(task: Any) -> Any:
    """A stored episode's task as people read it (a classic name, else the opaque id)."""
    from srelib.env.task_ids import public_name

    try:
        return public_name(task)
    except (ValueError, TypeError):
        return task
