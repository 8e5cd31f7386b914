"""Crafted submissions of notebook 03 (padding_mask, causal_mask) for the grader's tests, and verdicts
through the grader's protocol without the grader (``through_protocol``)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEARNER = ROOT / "notebooks" / "03_masks.ipynb"
SOLUTION = ROOT / "notebooks" / "solutions" / "03_masks.ipynb"
SOLUTIONS = ROOT / "notebooks" / "solutions"
PROFILE = ROOT / "tests" / "ipython_profile"

RIGHT = {
    "padding_mask": "def padding_mask(token_ids, pad_id):\n    return (token_ids != pad_id)[:, None, None, :]\n",
    "causal_mask": "def causal_mask(length):\n    return torch.ones(length, length, dtype=torch.bool).tril()\n",
}
WRONG = {
    "padding_mask": "def padding_mask(token_ids, pad_id):\n    return (token_ids == pad_id)[:, None, None, :]\n",
    "causal_mask": "def causal_mask(length):\n    return torch.ones(length, length, dtype=torch.bool).triu()\n",
}
PASS_LINE = "✓ padding_mask: all checks passed"


def load(path: Path = LEARNER) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def learner() -> dict:
    return load(LEARNER)


def solved(**answers) -> dict:
    """The learner notebook with the given exercise cells' sources (keys: exercise keys)."""
    nb = learner()
    for key, source in answers.items():
        set_exercise(nb, key, source)
    return nb


def _cell(nb: dict, role: str, key: str) -> dict:
    for c in nb["cells"]:
        meta = c.get("metadata", {}).get("encoder_course", {})
        if meta.get("role") == role and meta.get("exercise") == key:
            return c
    raise KeyError((role, key))


def set_exercise(nb: dict, key: str, source: str) -> dict:
    _cell(nb, "exercise", key)["source"] = source
    return nb


def set_check(nb: dict, key: str, source: str, outputs=None) -> dict:
    c = _cell(nb, "check", key)
    c["source"] = source
    if outputs is not None:
        c["outputs"] = outputs
    return nb


def add_cell(nb: dict, source: str, after: str = "padding_mask", meta: dict | None = None) -> dict:
    """Insert a code cell (no course metadata unless given) right after ``after``'s check cell."""
    index = nb["cells"].index(_cell(nb, "check", after)) + 1
    new = {"cell_type": "code", "execution_count": None, "id": f"added{len(nb['cells'])}",
           "metadata": {"encoder_course": meta} if meta else {}, "outputs": [], "source": source}
    nb["cells"].insert(index, new)
    return nb


def strip_course_metadata(nb: dict) -> dict:
    """As if every cell had been pasted anew: no course metadata, new ids."""
    nb = copy.deepcopy(nb)
    for i, c in enumerate(nb["cells"]):
        c["metadata"] = {}
        c["id"] = f"pasted{i}"
    return nb


def pass_output(name: str = "padding_mask") -> list:
    return [{"name": "stdout", "output_type": "stream", "text": [f"✓ {name}: all checks passed\n"]}]


def write(folder: Path, name: str, nb) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, ensure_ascii=False) if not isinstance(nb, str) else nb, encoding="utf-8")
    return path


def through_protocol(key: str, obj):
    """``checks.verdict(key, obj)`` with ``obj`` in a forked process, reached only through the protocol: what
    the grader does, without the cells and the sandbox (the tests compare it with the verdict on ``obj``)."""
    import torch.fx.experimental.symbolic_shapes  # noqa: F401 (autograd.grad imports it on first use: before the fork)

    from encoder_course.grading import checker_process, worker

    def serve():  # (the grader's learner's process enters its sandbox here: a session of its own, and more)
        os.setsid()
        worker.answer(obj, key)

    pid, request_w, reply_r = checker_process.start_learner(serve)
    try:
        return checker_process.judge(key, request_w, reply_r)
    finally:
        os.close(request_w)
        os.close(reply_r)
        os.waitpid(pid, 0)
