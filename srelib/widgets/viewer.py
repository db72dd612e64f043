"""The trajectory viewer: replay a saved episode with a slider and a Play control, over the
stepper's panes plus a phase timeline with per-step rewards."""

from __future__ import annotations

from typing import Any

from srelib.widgets.episode_panes import episode_header
from srelib.widgets.layout import Displayable, Panes, load_ipywidgets
from srelib.widgets.markup import pane
from srelib.widgets.playback import record_panes, replay


class TrajectoryViewer(Displayable):
    """Replay a saved episode: a slider and a Play control move through its records.

    ``episode_or_path`` is an Episode, an Episode dict, an episode JSON file, a run's
    ``episodes.jsonl`` or a run directory (``index`` picks the episode, 0 = first). Each
    record's result (alerts, logs, metrics, files, diffs) comes from a deterministic replay.
    """

    def __init__(self, episode_or_path: Any, index: int = 0, interval_ms: int = 700):
        from srelib.results.store import load_episode

        w = load_ipywidgets()
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
        self.header = w.HTML(pane(episode_header(self.episode)))
        self.timeline = w.HTML()
        self.panes = Panes()
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
        panes = record_panes(self.episode, self.first_obs, self.observations, self.note, index)
        self.timeline.value = pane(panes["timeline"])
        self.counter.value = pane(panes["counter"])
        for name in Panes.NAMES:
            self.panes.set(name, panes[name])


def _shown(task: Any) -> Any:
    """A stored episode's task as people read it (a classic name, else the opaque id)."""
    from srelib.env.tasks.ids import public_name

    try:
        return public_name(task)
    except (ValueError, TypeError):
        return task
