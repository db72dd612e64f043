"""The manual action form: pick one of the valid actions and fill its parameters, each field
built from the parameter's declaration and checked by the environment's own functions."""

from __future__ import annotations

from html import escape
from typing import Any

from srelib.env.actions import ACTION_SPECS, BELIEF_PARAMS, ActionType, clean_parameters
from srelib.widgets.layout import load_ipywidgets
from srelib.widgets.markup import pane


class ActionForm:
    """Pick one of the valid actions and fill its parameters.

    Fields are built from the parameters' declarations (``ACTION_SPECS``, ``BELIEF_PARAMS``):
    bounded number boxes for bounded ints, dropdowns for closed vocabularies; the form is
    checked with the environment's own functions before anything is sent.
    """

    def __init__(self):
        w = load_ipywidgets()
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
        w = load_ipywidgets()
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
        doc = w.HTML(pane(f'<span class="srl-meta">{escape(spec.doc)}</span>'))
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
    w = load_ipywidgets()
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
