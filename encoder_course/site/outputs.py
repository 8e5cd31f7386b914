"""A live widget on the website: the picture of its first state, and a line saying what it lets you change.

A page has no kernel, so a widget cannot run there. nbconvert stores every widget's state in the
notebook's metadata when it executes the notebook, and the Output widget inside an explorer holds the
figure it first drew: the site shows that figure (with its alt text and its display size) and names the
controls with what they can be set to. A widget with no stored picture gets its text as it first appears,
or a plain note. (The quizzes are not shown this way: :mod:`.site_quiz` makes them work on the page.)
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from dataclasses import dataclass, field

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


# -- outputs --------------------------------------------------------------------------------------

def html_output(markup: str) -> nbformat.NotebookNode:
    """An HTML display output."""
    return nbformat.v4.new_output("display_data", data={"text/html": markup})


def png_alt(output) -> str | None:
    """The alt text stored with a PNG output, or None."""
    alt = (output.get("metadata", {}).get("image/png") or {}).get("alt")
    return alt.strip() if isinstance(alt, str) and alt.strip() else None


def png_hash(b64: str | list) -> str:
    """The sha256 of a base64 PNG: the name MyST-NB gives its file, so the alt text finds its image."""
    if isinstance(b64, list):
        b64 = "".join(b64)
    return hashlib.sha256(base64.b64decode(b64)).hexdigest()


def png_metadata(output, alt: str) -> dict:
    """A PNG's metadata on the page: its alt text, and its display size when stored (a 2x PNG has one)."""
    stored = output.get("metadata", {}).get("image/png") or {}
    return {"alt": alt, **{k: stored[k] for k in ("width", "height") if isinstance(stored.get(k), int)}}


# -- widgets --------------------------------------------------------------------------------------

_LAYOUT_MODELS = ("VBoxModel", "HBoxModel", "BoxModel", "GridBoxModel", "AccordionModel", "TabModel")


def _walk(model_id: str, state: dict):
    """The widget models under ``model_id`` (itself first), depth first, in display order."""
    entry = state.get(model_id)
    if not entry:
        return
    yield entry
    for child in entry.get("state", {}).get("children", []):
        yield from _walk(str(child).replace("IPY_MODEL_", ""), state)


def _fmt(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _control(entry: dict) -> tuple[str, str, str] | None:
    """``(name, what it can be set to, its first value)`` of one control, or None for anything else."""
    name, s = entry.get("model_name", ""), entry.get("state", {})
    if name in _LAYOUT_MODELS or name in ("OutputModel", "HTMLModel", "HTMLMathModel", "LabelModel") \
            or not name.endswith("Model") or "Layout" in name or "Style" in name:
        return None
    label = s.get("description", "") or ""
    options = s.get("_options_labels")
    if options is not None:
        index = s.get("index")
        first = options[index] if isinstance(index, int) and 0 <= index < len(options) else "none chosen"
        choices = (", ".join(options[:-1]) + " or " + options[-1] if 1 < len(options) <= 6
                   else f"{options[0]} to {options[-1]}" if options else "")
        return label, choices, first
    if "min" in s and "max" in s:
        low, high = s["min"], s["max"]
        if name == "FloatLogSliderModel":
            base = s.get("base", 10.0)
            low, high = base ** low, base ** high
        return label, f"{_fmt(low)} to {_fmt(high)}", _fmt(s.get("value"))
    if name in ("CheckboxModel", "ToggleButtonModel"):
        return label, "on or off", "on" if s.get("value") else "off"
    if "value" in s:
        return label, "any value", _fmt(s.get("value"))
    return None


def _controls_from_repr(text: str) -> list[tuple[str, str, str]]:
    """Controls named in a widget's text/plain repr, when no widget state is stored."""
    return [(name, "", "") for name in dict.fromkeys(re.findall(r"description='([^']+)'", text))]


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _change_line(controls, has_picture: bool) -> str:
    named = [c for c in controls if c[0]]
    answers = [c for c in controls if not c[0] and c[1]]  # unlabelled choices: a quiz's questions
    parts = []
    if named:
        change = _join([f"<strong>{html.escape(n)}</strong>" + (f" ({html.escape(ch)})" if ch else "")
                        for n, ch, _ in named])
        parts.append(f"change {change}" + (", and the picture is drawn again" if has_picture else ""))
    if answers:
        parts.append(f"pick an answer to each of its {len(answers)} questions" if len(answers) > 1
                     else "pick an answer")
    if not parts:
        return "In the notebook this is a live widget."
    return f"In the notebook this is a live widget: you can {'; you can also '.join(parts)}."


def _static_markup(model_id: str, state: dict) -> str:
    """The text of a widget's first state (its HTML and its choices) for a widget with no picture."""
    parts = []
    for entry in _walk(model_id, state):
        s = entry.get("state", {})
        if entry.get("model_name") in ("HTMLModel", "HTMLMathModel") and s.get("value"):
            parts.append(f"<div>{s['value']}</div>")  # the course's own markup, stored by the notebook
        elif entry.get("model_name") == "LabelModel" and s.get("value"):
            parts.append(f"<p>{html.escape(s['value'])}</p>")
        elif s.get("_options_labels") and entry.get("model_name") in ("RadioButtonsModel", "SelectModel"):
            items = "".join(f"<li>{html.escape(o)}</li>" for o in s["_options_labels"])
            parts.append(f'<ol type="a">{items}</ol>')
    return "\n".join(parts)


@dataclass
class WidgetView:
    """What stands for a widget on a page: its outputs, the alt texts of its pictures, whether it has one."""

    outputs: list
    alt_texts: dict[str, str] = field(default_factory=dict)  # sha256 of a PNG -> its alt text
    has_picture: bool = False


def widget_outputs(data: dict, state: dict) -> WidgetView:
    """The outputs that stand for a widget on the page: its first picture and what it lets you change.

    Args:
        data: the widget's output data (its view, with the model id, and its text/plain repr).
        state: the widget state nbconvert stored in the notebook's metadata (may be empty).
    """
    model_id = (data.get(WIDGET_VIEW) or {}).get("model_id", "")
    entries = list(_walk(model_id, state))
    controls = [c for c in (_control(e) for e in entries) if c]
    if not entries:
        controls = _controls_from_repr(str(data.get("text/plain", "")))
    shown = [f"{n} = {first}" for n, _, first in controls if n and first]
    view = WidgetView([])
    for entry in entries:
        if entry.get("model_name") != "OutputModel":
            continue
        for out in entry.get("state", {}).get("outputs", []):
            out = nbformat.from_dict(out)
            if "image/png" in out.get("data", {}):
                alt = png_alt(out) or ("The first picture the live widget draws"
                                       + (f", for {', '.join(shown)}" if shown else "") + ".")
                view.alt_texts[png_hash(out["data"]["image/png"])] = alt
                view.outputs.append(nbformat.v4.new_output(
                    "display_data", data={"image/png": out["data"]["image/png"], "text/plain": alt},
                    metadata={"image/png": png_metadata(out, alt)}))
            elif out.get("output_type") == "stream" or "text/plain" in out.get("data", {}):
                view.outputs.append(out)
    view.has_picture = bool(view.outputs)
    line = _change_line(controls, view.has_picture)
    if view.outputs:
        first = f" Shown here: its first picture, for {html.escape(', '.join(shown))}." if shown else ""
        note = f"{line}{first} Open the notebook on Colab or Binder to use it."
        view.outputs.append(html_output(f'<p class="ec-widget-note">{note}</p>'))
        return view
    text = _static_markup(model_id, state) if entries else ""
    plain = ("The notebook stores no picture of this widget" + (", so here is its text as it first appears."
                                                                 if text else ", so it cannot be shown here."))
    note = f"{plain} {line} Open the notebook on Colab or Binder to use it."
    markup = f'<div class="ec-widget-static">\n{text}\n</div>' if text else ""
    view.outputs.append(html_output(f'<p class="ec-widget-note">{note}</p>{markup}'))
    return view
