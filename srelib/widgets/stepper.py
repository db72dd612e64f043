"""The episode stepper: play an incident step by step, with a policy or by hand (the manual
action form); Run to end works in a background thread, so the kernel stays free while a slow
policy thinks."""

from __future__ import annotations

import threading
from html import escape
from typing import Any, Callable

from srelib.env.records import handoff
from srelib.episode import EpisodeRun, EpisodeSpec, EpisodeSteps, advance, episode_steps
from srelib.widgets.action_form import ActionForm
from srelib.widgets.episode_panes import score
from srelib.widgets.layout import Displayable, Panes, load_ipywidgets
from srelib.widgets.markup import error_box, pane
from srelib.widgets.observation_panes import counter, incident, last_action, rewards, status_board
from srelib.widgets.result_panes import belief


MANUAL = "manual"
#: Widths shared by the pickers so the control rows line up.
_PICKER_WIDTH = "210px"


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


class EpisodeStepper(Displayable):
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

        from srelib.env.tasks.catalog import resolve_tasks
        from srelib.env.core import IncidentEnv
        from srelib.env.tasks.pools import POOLS
        from srelib.env.simulation.scenarios import TASKS

        if pool is not None and pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; valid: {[None, *POOLS]}")
        chosen = resolve_tasks(task, POOLS[pool].split if pool else None)  # an id or a suite
        task, options = chosen[0], list(dict.fromkeys([*TASKS, *chosen]))
        w = load_ipywidgets()
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
        self.form = ActionForm()
        self.panes = Panes()
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
        set_pane("incident", incident(obs))
        set_pane("board", status_board(obs.get("service_statuses")))
        set_pane("rewards", rewards(obs))
        set_pane("action", last_action(self.last_action, obs))
        set_pane("belief", belief(*handoff(self.env.trajectory)))
        set_pane("score", score(self.info.get("score")) if self.done else "")
        self.counter.value = pane(counter(
            obs.get("steps_taken"), obs.get("max_steps"), obs.get("current_phase"), self.done))
        self.form.set_valid_actions([] if self.done else list(obs.get("valid_actions") or []))
        self._show_form()

    def _show_form(self) -> None:
        self.manual_box.layout.display = "" if self.policy_picker.value == MANUAL else "none"

    def _status(self, text: str, error: bool = False) -> None:
        if not text:
            self.panes.set("status", "")
        elif error:
            self.panes.set("status", error_box(text))
        else:
            self.panes.set("status", f'<div class="srl-note">{escape(text)}</div>')

    def _set_running(self, running: bool) -> None:
        for control in (self.reset_button, self.step_button, self.run_button, self.task_picker,
                        self.pool_picker, self.seed_picker, self.policy_picker):
            control.disabled = running
        self.stop_button.disabled = not running
        self.stop_button.button_style = "danger" if running else ""
