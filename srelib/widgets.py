"""Notebook widgets: step through an episode live, replay a saved one, or render it statically.

* :class:`EpisodeStepper` plays an incident: pick a task, pool, seed and policy (or play it
  yourself through a form built from ``actions.ACTION_SPECS``), then Reset, Step or Run to end.
  Run to end works in a background thread, so the kernel stays free while a slow policy thinks.
* :class:`TrajectoryViewer` replays a saved :class:`~srelib.results.Episode` with a slider and a
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

from srelib import render
from srelib.env.actions import ACTION_SPECS, FAULT_CLASSES, SERVICES, ActionType

MANUAL = "manual"
#: The values BeliefState documents for its two choice fields.
P2_COSTS = ("unknown", "low", "medium", "high")
DECISIONS = ("transition", "continue", "abort")
#: Widths shared by the pickers so the control rows line up.
_PICKER_WIDTH = "210px"


# ---------------------------------------------------------------- loading and replaying episodes

def load_episode(source: Any, index: int = 0) -> dict:
    """An Episode dict from an Episode, an Episode dict, an episode JSON file, a run's
    ``episodes.jsonl`` or a run directory (``index`` picks the line, 0 = first)."""
    from srelib.results import EPISODES_FILE, Episode

    if isinstance(source, Episode):
        return source.to_dict()
    if isinstance(source, dict):
        return Episode.from_dict(source).to_dict()
    if not isinstance(source, (str, Path)):
        raise ValueError("expected an Episode, an Episode dict, or a path to an episode .json, "
                         f"an episodes.jsonl or a run directory; got {type(source).__name__}")
    path = Path(source)
    if path.is_dir():
        path = path / EPISODES_FILE
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    if path.suffix == ".jsonl":
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not -len(lines) <= index < len(lines):
            raise ValueError(f"index {index} out of range: {path} holds {len(lines)} episodes")
        return Episode.from_json(lines[index]).to_dict()
    return Episode.from_dict(json.loads(path.read_text(encoding="utf-8"))).to_dict()


def replay(episode: dict) -> tuple[dict | None, list[dict | None], str | None]:
    """Re-run an episode's recorded actions in a fresh environment to recover what it saw.

    Returns ``(reset_observation, observations, note)``: one observation per trajectory record
    (the pool-B handoff record gets the reset observation). The environment is deterministic,
    so a replay reproduces the run; if a record's statuses or reward differ (an episode from
    another srelib version), observations stop there and ``note`` says where.
    """
    from srelib.env.core import IncidentEnv

    steps = episode.get("steps") or []
    env = IncidentEnv()
    try:
        first, _info = env.reset(task=episode["task"], pool=episode.get("pool"),
                                 mode=episode.get("mode"), seed=episode["seed"])
    except (KeyError, ValueError) as exc:
        return None, [None] * len(steps), f"cannot replay this episode: {exc}"
    observations: list[dict | None] = [first] * min(len(env.trajectory), len(steps))
    for number, record in enumerate(steps[len(observations):], len(observations)):
        obs, reward, _term, _trunc, _info = env.step(record.get("action"))
        if obs.get("service_statuses") != record.get("statuses") or \
                abs(reward - float(record.get("reward") or 0.0)) > 1e-6:
            note = (f"replay diverged at record {number} (step {record.get('step')}); "
                    "later steps show the recorded trajectory only")
            return first, observations + [None] * (len(steps) - number), note
        observations.append(obs)
    return first, observations, None


def to_html(episode: Any, index: int = 0, replay_results: bool = True) -> str:
    """A static, self-contained HTML page of an episode (inline CSS and SVG, no script).

    Accepts what :class:`TrajectoryViewer` accepts. With ``replay_results`` each step also
    shows its rendered result (alerts, logs, metrics, files, diffs), recovered by a
    deterministic replay. The page is byte-identical for a fixed seed.
    """
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
    from srelib.cli import registered_name

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
    from srelib.cli import POLICY_CLASSES, scripted_policy

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
    """Pick one of the valid actions and fill its parameters (built from ACTION_SPECS)."""

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
        """What keeps the form from being an action: required fields left blank, and values
        of the wrong type (each named once). Empty when the form is ready to step."""
        spec, found = self._spec(), []
        if spec is None:
            return ["pick an action"]
        for name, param in spec.params.items():
            widget = self.fields.get(name)
            if widget is None:  # the belief: its fields have defaults or are optional
                continue
            value = _field_value(widget)
            if value is None and param.required:
                found.append(f"{name} is required ({param.doc})")
            elif value is not None and getattr(widget, "param_type", None) is int and \
                    not isinstance(value, int):
                found.append(f"{name} must be a whole number, got {widget.value.strip()!r}")
        return found

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


def _param_widget(name: str, param) -> Any:
    w = _widgets()
    layout = w.Layout(width="640px")
    style = {"description_width": "110px"}
    if param.type is bool:
        return w.Checkbox(description=name, value=bool(param.default), indent=False)
    if name == "service":
        return w.Dropdown(description=name, options=["", *SERVICES], layout=layout, style=style)
    if name == "fault_class":
        return w.Dropdown(description=name, options=["", *FAULT_CLASSES], layout=layout,
                          style=style)
    hint = param.doc + ("" if param.default is None else f" (default {param.default})")
    hint += " \u2014 required" if param.required else ""
    cls = w.Textarea if name in ("diff", "root_cause", "reason") else w.Text
    widget = cls(description=name, placeholder=hint, layout=layout, style=style)
    widget.param_type = param.type
    return widget


def _belief_fields() -> dict[str, Any]:
    w = _widgets()
    layout = w.Layout(width="640px")
    style = {"description_width": "160px"}
    fields = {
        "suspected_service": w.Dropdown(options=["", *SERVICES]),
        "suspected_fault_class": w.Dropdown(options=["", *FAULT_CLASSES]),
        "service_confidence": w.FloatSlider(min=0.0, max=1.0, step=0.05, value=0.5),
        "fault_confidence": w.FloatSlider(min=0.0, max=1.0, step=0.05, value=0.5),
        "evidence_gaps": w.Text(placeholder="comma-separated"),
        "estimated_p2_cost": w.Dropdown(options=P2_COSTS,
                                        value="unknown"),
        "decision": w.Dropdown(options=DECISIONS,
                               value="transition"),
        "reasoning": w.Textarea(),
    }
    for name, widget in fields.items():
        widget.description, widget.layout, widget.style = name, layout, style
    return {f"belief.{name}": widget for name, widget in fields.items()}


def _field_value(widget) -> Any:
    value = widget.value
    if isinstance(value, str):
        if not value.strip():
            return None
        if getattr(widget, "param_type", str) is int:
            try:
                return int(value.strip())
            except ValueError:
                return value  # problems() names it before anything is stepped
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
        self.obs: dict = {}
        self.info: dict = {}
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
    def done(self) -> bool:
        return bool(self.obs.get("done"))

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def policy(self) -> Any:
        """The policy the picker selects (built on first use), or None in manual mode."""
        name = self.policy_picker.value
        if name not in self._policies and self._factories.get(name) is not None:
            self._policies[name] = self._factories[name]()
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
        from srelib.rollout import reset_policy

        with self._lock:
            self.obs, self.info = self.env.reset(task=self.task, pool=self.pool_picker.value,
                                                 mode=self.mode, seed=self.seed_picker.value)
            self.last_action = None
            for policy in self._policies.values():
                reset_policy(policy, self.seed_picker.value, self.task)
            self._render()
            self._status("")
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
            return policy(self.obs, self.obs.get("current_phase"), self.task)
        except Exception as exc:  # a policy bug is shown, not raised into the event loop
            self._status(f"The policy raised {type(exc).__name__}: {exc}", error=True)
            return None

    def _apply(self, action: Any):
        with self._lock:
            if self.done:
                self._status("The episode is over: press Reset for a new one.", error=True)
                return None
            self.obs, reward, terminated, truncated, self.info = self.env.step(action)
            self.last_action = action if isinstance(action, dict) else {"action_type": action}
            self._render()
            self._status("")  # an invalid action's error is in the action pane, once
            return self.obs, reward, terminated, truncated, self.info

    def _handoff(self) -> tuple[dict | None, bool]:
        for record in reversed(self.env.trajectory):
            effect = record.get("effect") or {}
            if "belief" in effect:
                return effect["belief"], bool(effect.get("oracle"))
        return None, False

    def _render(self) -> None:
        obs, set_pane = self.obs, self.panes.set
        set_pane("incident", render.incident(obs))
        set_pane("board", render.status_board(obs.get("service_statuses")))
        set_pane("rewards", render.rewards(obs))
        set_pane("action", render.last_action(self.last_action, obs))
        handoff, oracle = self._handoff()
        set_pane("belief", render.belief(handoff, oracle))
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
                f"task={self.episode.get('task')}, pool={self.episode.get('pool')}, "
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
        handoff = next(((r["effect"]["belief"], bool(r["effect"].get("oracle")))
                        for r in reversed(self.steps[:index + 1])
                        if "belief" in (r.get("effect") or {})), (None, False))
        set_pane("belief", render.belief(*handoff))
        set_pane("score", render.score(self.episode.get("score")) if index == len(self.steps) - 1
                 else "")
