"""The package's layout rules (issue 11): the model imports only the model; importing the package loads
no plotting or Jupyter module; no module grows past about 600 lines."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "encoder_course"
MODEL = ("positions", "attention", "masks", "multi_head", "layer_norm", "feed_forward", "block", "encoder",
         "pooling", "blockwise", "unpadding")
MAX_LINES = 650  # "about 600"


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.update({base} if node.module else {f"{base}{alias.name}" for alias in node.names})
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("name", MODEL)
def test_a_model_module_imports_only_torch_and_the_model(name):
    allowed = {f".{m}" for m in MODEL} | {"._validate", "__future__", "math", "dataclasses", "torch",
                                         "torch.nn", "torch.nn.functional"}
    extra = _imports(PACKAGE / f"{name}.py") - allowed
    assert not extra, f"{name}.py imports {sorted(extra)}"


def test_importing_the_package_loads_no_plotting_or_jupyter_module():
    code = ("import sys, encoder_course\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'ipywidgets', 'IPython', "
            "'jupyter_client', 'nbformat', 'nbclient', 'sphinx', 'torch')])\n"
            "encoder_course.Encoder\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'ipywidgets', 'IPython')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["[]", "[]"], out.stdout + out.stderr  # not even torch until a name is used


MODEL_PATH = """
import sys
import torch
import encoder_course as ec
from encoder_course import checks
from tests.checks.catalogue import sdpa
names = {n: getattr(ec, n) for n in ec.__all__}  # every public name loaded
before = set(sys.modules)
for norm_first in (False, True):
    config = ec.EncoderConfig(vocab_size=50, max_len=16, d_model=16, n_heads=2, d_ff=32, n_layers=2,
                              norm_first=norm_first)
    model = ec.Encoder(config)
    ids = torch.randint(1, 50, (2, 7))
    ids[0, 5:] = 0
    model(ids, ids != 0).sum().backward()
    model.eval()
    model.attention_maps(ids)
q = torch.randn(2, 2, 5, 8, requires_grad=True)
out, weights = ec.scaled_dot_product_attention(q, q, q, ec.causal_mask(5))
(out.sum() + ec.online_softmax_attention(q, q, q, None, 2).sum()).backward()
ec.mean_pool(torch.randn(2, 7, 8), ids != 0)
ec.count_parameters(model)
print("model", sorted(m for m in set(sys.modules) - before if not m.startswith("encoder_course.")))
before = set(sys.modules)
checks.check_scaled_dot_product_attention(sdpa)
checks.check_padding_mask(lambda ids, pad_id: (ids != pad_id)[:, None, None, :])
print("checks", sorted(m for m in set(sys.modules) - before if not m.startswith("encoder_course.")))
"""


def test_the_model_and_its_checks_import_nothing_lazily():
    """A lazy import on the model's path (torch.broadcast_shapes imports torch.fx and sympy) costs seconds
    on a busy machine and can be cut in half by a time-out: none happens once the names are loaded."""
    out = subprocess.run([sys.executable, "-c", MODEL_PATH], capture_output=True, text=True, timeout=300,
                         cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith(("model", "checks"))]
    assert lines == ["model []", "checks []"], out.stdout


def test_broadcast_shape_agrees_with_torch():
    import torch

    from encoder_course._validate import broadcast_shape

    cases = [((), ()), ((2, 1), (1, 3)), ((4, 1, 1, 5), (4, 2, 5, 5)), ((3,), (2, 3)), ((2, 3), (3, 2)),
             ((1,), (0,)), ((2, 0), (1, 1)), ((5, 1, 7), (3, 1), (1,)), ((2,), (3,))]
    for shapes in cases:
        try:
            expected = tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError:
            expected = None
        assert broadcast_shape(*shapes) == expected, shapes


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_about_600_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines"


def test_the_top_of_the_package_is_the_model_and_the_rest_in_rooms_by_job():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    # yours: the learner's own encoder, next to its workspace; cli: the command line, which dispatches to the rooms
    assert modules == set(MODEL) | {"__init__", "_validate", "yours", "workspace", "cli"}, modules
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(ROOMS) | {"data", "course"}, folders  # course: the old path of the CLI, for one release
    import encoder_course

    homes = {encoder_course._SOURCES[name] for name in encoder_course.__all__}
    assert homes - set(MODEL) == {"measure.counting"}  # count_parameters, which the package contract promises


# Folders of one job, and what each holds; the folders of one module per concept, exercise or notebook
# (checks/, measure/, plots/, widgets/, quizzes/bank/) grow with the course.
ROOMS = {"grading": 12, "site": 12, "notebook_tools": 12, "quizzes": 12, "interop": 12, "tools": 12,
         "checks": None, "measure": None, "plots": None, "widgets": None}


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_each_room_says_its_job_and_what_it_may_import(room):
    doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text(encoding="utf-8")))
    assert doc and len(doc.split()) >= 12, f"{room}/__init__.py does not say its job"
    limit = ROOMS[room]
    if limit is not None:
        modules = [p for p in (PACKAGE / room).glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= limit, f"{room}/ holds {len(modules)} modules"


# The layers, lowest first: a module imports only from its own room or from a lower layer (rooms on one layer
# do not import each other). The exercise registry sits below the learner's workspace, which the checks save
# passing answers into; the checks' machinery sits above both.
LAYERS = [
    {"model": ["encoder_course", "encoder_course._validate"] + [f"encoder_course.{m}" for m in MODEL]},
    {"interop": ["encoder_course.interop"], "tools": ["encoder_course.tools"], "plots": ["encoder_course.plots"]},
    {"measure": ["encoder_course.measure"]},
    {"registry": ["encoder_course.checks.registry"]},
    {"workspace": ["encoder_course.workspace"]},
    {"checks": ["encoder_course.checks"]},
    {"notebook_tools": ["encoder_course.notebook_tools"]},
    {"quizzes": ["encoder_course.quizzes"]},
    {"grading": ["encoder_course.grading"], "site": ["encoder_course.site"], "widgets": ["encoder_course.widgets"]},
    {"yours": ["encoder_course.yours"]},
    {"cli": ["encoder_course.cli", "encoder_course.course"]},
]


def _room_of(module: str) -> tuple[int, str]:
    """The layer and room of a module: the room of the longest prefix that names it."""
    matches = [(len(prefix), layer, room) for layer, rooms in enumerate(LAYERS) for room, prefixes in rooms.items()
               for prefix in prefixes
               if module == prefix or (prefix != "encoder_course" and module.startswith(prefix + "."))]
    assert matches, f"{module} is in no room: add it to LAYERS"
    _, layer, room = max(matches)
    return layer, room


def test_every_import_goes_down_the_layers():
    wrong = []
    for module, targets in _module_graph().items():
        layer, room = _room_of(module)
        for target in targets:
            t_layer, t_room = _room_of(target)
            if t_room != room and t_layer >= layer:
                wrong.append(f"{module} ({room}) imports {target} ({t_room})")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(wrong))


def test_the_layer_check_sees_an_import_against_the_layers(tmp_path, monkeypatch):
    graph = _module_graph()
    graph["encoder_course.checks._run"] = graph["encoder_course.checks._run"] | {"encoder_course.grading.grade"}
    monkeypatch.setattr(sys.modules[__name__], "_module_graph", lambda: graph)
    with pytest.raises(AssertionError, match="checks._run .checks. imports encoder_course.grading.grade"):
        test_every_import_goes_down_the_layers()


def _module_graph() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports (lazily or not), by dotted name."""
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in names.items():
        here = name.split(".") if path.stem == "__init__" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]) if node.level else node.module
                targets |= {base.rstrip(".")} | {f"{base.rstrip('.')}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        found = set()
        for target in targets:
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):  # a parent package is implied
                found.add(target)
        graph[name] = found
    return graph


def test_no_module_imports_in_a_cycle():
    graph = _module_graph()
    assert graph["encoder_course.yours"] >= {"encoder_course.workspace"}  # the walk sees imports

    def reaches(start, goal, seen):
        return any(nxt == goal or (nxt not in seen and not seen.add(nxt) and reaches(nxt, goal, seen))
                   for nxt in graph[start])

    cycles = sorted(name for name in graph if reaches(name, name, set()))
    assert not cycles, f"modules in an import cycle: {cycles}"


def test_import_encoder_course_lists_only_the_models_names():
    code = ("import encoder_course as ec\nec.Encoder, ec.count_parameters\n"
            "public = [n for n in dir(ec) if not n.startswith('_')]\n"
            "assert public == sorted(ec.__all__), public\nprint(len(public))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
