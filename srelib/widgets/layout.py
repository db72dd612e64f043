"""What every widget shares: ipywidgets loaded on first use, the HTML panes laid out in two
columns, and display as the widget tree with a one-line ``text/plain`` summary."""

from __future__ import annotations

from typing import Any

from srelib.extras import require
from srelib.widgets.markup import pane, style_tag


def load_ipywidgets():
    """ipywidgets, imported on first use (never at module import)."""
    require("ipywidgets", "srelib.widgets.layout")
    import ipywidgets

    return ipywidgets


class Panes:
    """The HTML panes the stepper and the viewer share."""

    NAMES = ("incident", "board", "rewards", "status", "action", "belief", "score")

    def __init__(self):
        w = load_ipywidgets()
        self.style = w.HTML(style_tag())
        self.html = {name: w.HTML() for name in self.NAMES}
        for widget in self.html.values():
            widget.add_class("srl-html")  # lets wide content shrink to the pane (markup.STYLE)

    def set(self, name: str, fragment: str) -> None:
        self.html[name].value = pane(fragment) if fragment else ""

    def boxes(self) -> list:
        """The incident column beside the handoff-and-score column; on a narrow screen the
        second goes below the first rather than squeezing its tables."""
        w = load_ipywidgets()
        h = self.html
        top = w.HBox([w.VBox([h["incident"], h["board"], h["rewards"], h["status"]],
                             layout=w.Layout(flex="3 1 400px", min_width="0")),
                      w.VBox([h["belief"], h["score"]],
                             layout=w.Layout(flex="2 1 340px", min_width="0"))],
                     layout=w.Layout(flex_flow="row wrap", width="100%"))
        return [self.style, top, h["action"]]


class Displayable:
    """Display as the widget tree, with a one-line summary as the ``text/plain`` part."""

    ui: Any

    def _repr_mimebundle_(self, **kwargs):
        data = dict(self.ui._repr_mimebundle_(**kwargs) or {})
        data["text/plain"] = repr(self)
        return data
