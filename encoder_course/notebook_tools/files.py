"""Facts shared by every notebook (the repository URL, the Colab set-up cell) and the one way the course writes one."""

from __future__ import annotations

import re

# The one place the repository's address is kept (README's badges and the Colab cell use it).
REPO_URL = "https://github.com/encoder-course/encoder-course"
REPO_SLUG = "encoder-course/encoder-course"
BRANCH = "main"
# A check cell's call, ``checks.check_<exercise>(<answer>)`` (the release and the grader read it).
CHECK_CALL = re.compile(r"checks\.check_([A-Za-z_]\w*)\s*\(\s*([A-Za-z_][\w.]*)\s*\)")
COLAB_SOURCE = f"git+{REPO_URL}@{BRANCH}"

_COLAB_TEMPLATE = '''# Colab only: install the course, keeping Colab's own torch and widgets (does nothing elsewhere).
import sys
if "google.colab" in sys.modules:
    import subprocess
    from importlib.metadata import version
    keep = [f"{{name}}=={{version(name)}}" for name in ("torch", "ipywidgets")]  # never replace Colab's own
    course = "encoder-course[pretrained] @ {source}"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", course, *keep],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("Installing the course failed, so the cells below would fail too:\\n"
                           + done.stderr[-1500:] + "\\nCheck that this runtime reaches the internet, "
                           "then run this cell again.")'''


def colab_cell(source: str = COLAB_SOURCE) -> str:
    """The first cell of every notebook, installing the course from ``source`` (a pip URL) on Colab."""
    return _COLAB_TEMPLATE.format(source=source)


COLAB_CELL = colab_cell()


# -- reading and writing notebooks: one stable form -------------------------------------------------------------
#
# Every notebook the course writes (``encoder-course execute``, the learner versions) goes through
# :func:`write_notebook`, so that running it again changes only what really changed: cell ids are kept
# (a cell without one gets an id made from its place and text, never a random one), no run's timestamps are
# stored, widget models are numbered in the order they appear, and the text is nbformat's own (indent 1,
# sorted keys). Outputs, images included, are stored as the kernel sent them.

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_MODEL_REF = "IPY_MODEL_"
_CELL_ID_RE = r"^[a-zA-Z0-9-_]{1,64}$"
#: Cell metadata that records one run, not the notebook: nbclient's and JupyterLab's execution timestamps.
VOLATILE_CELL_METADATA = ("execution", "ExecuteTime")


def derived_cell_id(cell, index: int, taken=()) -> str:
    """An id for a cell that has none: from its place and its text, so the same notebook always gets the same."""
    import hashlib

    text = f"{index}\n{cell.get('cell_type', '')}\n{cell.get('source', '')}"
    base = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    cell_id, n = base, 1
    while cell_id in taken:
        cell_id, n = f"{base}-{n}", n + 1
    return cell_id


def read_notebook(path):
    """Read a notebook as nbformat 4; a cell stored without an id gets a derived one (nbformat picks a random one)."""
    import json
    from pathlib import Path

    import nbformat

    text = Path(path).read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    stored = json.loads(text).get("cells", [])
    if len(stored) == len(nb.cells):
        taken = {c.get("id") for c in stored if isinstance(c, dict) and c.get("id")}
        for index, (raw, cell) in enumerate(zip(stored, nb.cells)):
            if isinstance(raw, dict) and not raw.get("id") and "id" in cell:
                cell["id"] = derived_cell_id(cell, index, taken)
                taken.add(cell["id"])
    return nb


def _model_ids(value):
    """The widget model ids ``value`` refers to, in order: ``IPY_MODEL_`` strings and widget views' model ids."""
    if isinstance(value, str):
        if value.startswith(_MODEL_REF):
            yield value[len(_MODEL_REF):]
    elif isinstance(value, dict):
        for key in sorted(value):
            if key == WIDGET_VIEW and isinstance(value[key], dict) and value[key].get("model_id"):
                yield str(value[key]["model_id"])
            else:
                yield from _model_ids(value[key])
    elif isinstance(value, list):
        for item in value:
            yield from _model_ids(item)


def _renamed(value, names: dict):
    """``value`` with every widget model id in it replaced by its new name."""
    if isinstance(value, str):
        if value.startswith(_MODEL_REF) and value[len(_MODEL_REF):] in names:
            return _MODEL_REF + names[value[len(_MODEL_REF):]]
        return value
    if isinstance(value, dict):
        out = {key: _renamed(item, names) for key, item in value.items()}
        view = out.get(WIDGET_VIEW)
        if isinstance(view, dict) and view.get("model_id") in names:
            out[WIDGET_VIEW] = {**view, "model_id": names[view["model_id"]]}
        return out
    if isinstance(value, list):
        return [_renamed(item, names) for item in value]
    return value


def widget_model_names(nb) -> dict:
    """Old widget model id -> new one: ``000…1``, ``000…2``, … in the order the models appear.

    The order: the cells' outputs from the top, each model followed by the models its state refers to
    (children, layout, style), depth first; then models that nothing shows, in the order they were stored.
    The kernel picks a random id for every model; numbered like this, a notebook run twice stores the
    same ids.
    """
    state = (nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE) or {}).get("state") or {}
    order: dict = {}

    def visit(model_id):
        if model_id in order:
            return
        order[model_id] = f"{len(order) + 1:032x}"
        for ref in _model_ids(state.get(model_id, {}).get("state", {})):
            visit(ref)

    for cell in nb.get("cells", []):
        for model_id in _model_ids(cell.get("outputs", [])):
            visit(model_id)
    for model_id in state:
        visit(model_id)
    return order


def stable_notebook(nb):
    """A copy of ``nb`` in the form the course stores: kept (or derived) cell ids, no timestamps, numbered widgets."""
    import re

    import nbformat

    nb = nbformat.from_dict(nb)  # a deep copy
    if nb.get("nbformat") == 4 and nb.get("nbformat_minor", 0) < 5:
        nb["nbformat_minor"] = 5  # cell ids exist from 4.5 on
    taken: set = set()
    for index, cell in enumerate(nb.cells):
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not re.match(_CELL_ID_RE, cell_id) or cell_id in taken:
            cell["id"] = derived_cell_id(cell, index, taken)
        taken.add(cell["id"])
        for key in VOLATILE_CELL_METADATA:
            cell.get("metadata", {}).pop(key, None)
    names = {old: new for old, new in widget_model_names(nb).items() if old != new}
    if names:
        for cell in nb.cells:
            if "outputs" in cell:
                cell["outputs"] = _renamed(cell["outputs"], names)
        widgets = nb.metadata.get("widgets", {}).get(WIDGET_STATE) or {}
        if "state" in widgets:
            widgets["state"] = {names.get(k, k): _renamed(v, names) for k, v in widgets["state"].items()}
    return nbformat.from_dict(nb)


def notebook_text(nb) -> str:
    """The exact text the course stores for ``nb``: :func:`stable_notebook`, as nbformat writes it."""
    import nbformat

    text = nbformat.writes(stable_notebook(nb))
    return text if text.endswith("\n") else text + "\n"  # as nbformat.write does


def write_notebook(nb, path) -> bool:
    """Write ``nb`` to ``path`` in the stable form (:func:`notebook_text`); False when the file already held it."""
    from pathlib import Path

    path, text = Path(path), notebook_text(nb)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True
