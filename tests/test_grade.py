"""`encoder-course grade`: a folder of crafted submissions, good and bad, each gets its row."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import nbformat
import pytest

from encoder_course.cli import main
from encoder_course.grade import grade

PROFILE = Path(__file__).resolve().parent / "ipython_profile"

IMPORTS = "from encoder_course import checks\nimport torch"
RIGHT_CAUSAL = "def causal_mask(L):\n    return torch.ones(L, L, dtype=torch.bool).tril()"
WRONG_CAUSAL = "def causal_mask(L):\n    return torch.ones(L, L, dtype=torch.bool).triu()"
RIGHT_PAD = "def padding_mask(ids, pad_id):\n    return (ids != pad_id)[:, None, None, :]"
WRONG_PAD = "def padding_mask(ids, pad_id):\n    return (ids == pad_id)[:, None, None, :]"
STUB_PE = ("def sinusoidal_positions(seq_len, d_model):\n"
           "    raise NotImplementedError(\"Exercise: write sinusoidal_positions: replace this line with your code\")")
CHECK_PE = "checks.check_sinusoidal_positions(sinusoidal_positions)"
CHECK_LN = "checks.check_layer_norm(LayerNorm)  # never defined: an error, not a failure"
CHECK_CAUSAL = "# NBVAL_CHECK_OUTPUT\nchecks.check_causal_mask(causal_mask)"
CHECK_PAD = "# NBVAL_CHECK_OUTPUT\nchecks.check_padding_mask(padding_mask)"


def _nb(*sources, fake_pass_output=False):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Submission")]
    for src in sources:
        cell = nbformat.v4.new_code_cell(src)
        if fake_pass_output and "checks.check_" in src:  # stored outputs must not be trusted
            name = src.split("check_")[1].split("(")[0]
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                   text=f"✓ {name}: all checks passed\n")]
        nb.cells.append(cell)
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    # one kernel shows passed, failed, not attempted and error
    nbformat.write(_nb(IMPORTS, RIGHT_CAUSAL, CHECK_CAUSAL, WRONG_PAD, CHECK_PAD, STUB_PE, CHECK_PE,
                       CHECK_LN), folder / "alice.ipynb")
    nbformat.write(_nb(IMPORTS, RIGHT_CAUSAL, CHECK_CAUSAL, "while True:\n    pass", RIGHT_PAD, CHECK_PAD,
                       fake_pass_output=True), folder / "carol_loops.ipynb")
    nbformat.write(_nb(IMPORTS, CHECK_CAUSAL, "import os\nos._exit(3)", CHECK_PAD), folder / "dan_exits.ipynb")
    nbformat.write(_nb(IMPORTS, "print('I removed the exercises')"), folder / "erin_deleted.ipynb")
    (folder / "frank_broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (folder / "gina_empty.ipynb").write_text("", encoding="utf-8")
    (folder / "hana_list.ipynb").write_text("[1, 2, 3]", encoding="utf-8")
    old = os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(PROFILE)
    try:
        csv_path = folder / "grades.csv"
        log = folder / "log.txt"
        with open(log, "w", encoding="utf-8") as out:
            results = grade([folder], timeout=20, csv_path=csv_path, out=out)
    finally:
        if old is None:
            os.environ.pop("IPYTHONDIR", None)
        else:
            os.environ["IPYTHONDIR"] = old
    return {r.submission: r for r in results}, csv_path, log.read_text(encoding="utf-8")


pytestmark = pytest.mark.notebooks


def test_every_submission_has_a_row(graded):
    results, _, _ = graded
    assert sorted(results) == ["alice.ipynb", "carol_loops.ipynb", "dan_exits.ipynb",
                               "erin_deleted.ipynb", "frank_broken.ipynb", "gina_empty.ipynb",
                               "hana_list.ipynb"]


def test_statuses(graded):
    r, _, _ = graded
    assert r["alice.ipynb"].notebook == "ok"
    assert r["alice.ipynb"].checks == {"causal_mask": "passed", "padding_mask": "failed",
                                       "sinusoidal_positions": "not attempted", "layer_norm": "error"}
    assert any("NameError" in note for note in r["alice.ipynb"].notes)
    assert r["carol_loops.ipynb"].notebook == "timed out"
    # its stored "✓" output is ignored: the cell never ran this time
    assert r["carol_loops.ipynb"].checks == {"causal_mask": "passed", "padding_mask": "timed out"}
    assert r["dan_exits.ipynb"].notebook == "kernel died"
    assert r["dan_exits.ipynb"].checks["causal_mask"] == "error"  # NameError: never defined
    assert r["dan_exits.ipynb"].checks["padding_mask"] == "error"
    assert r["erin_deleted.ipynb"].notebook.startswith("no check cells")
    assert r["frank_broken.ipynb"].notebook == "broken JSON"
    assert r["gina_empty.ipynb"].notebook == "empty file"
    assert r["hana_list.ipynb"].notebook == "not a notebook"


def test_table_and_csv(graded):
    _, csv_path, log = graded
    assert "submission" in log and "causal_mask" in log and "not attempted" in log
    rows = list(csv.reader(csv_path.open(encoding="utf-8")))
    assert rows[0] == ["submission", "notebook", "causal_mask", "padding_mask", "sinusoidal_positions",
                       "layer_norm", "score", "notes"]
    by_name = {row[0]: row for row in rows[1:]}
    assert by_name["erin_deleted.ipynb"][2:7] == ["missing"] * 4 + ["0/4"]
    assert by_name["alice.ipynb"][2:7] == ["passed", "failed", "not attempted", "error", "1/4"]
    assert "inverted" in by_name["alice.ipynb"][7]


def test_cli_on_files_that_need_no_kernel(tmp_path, capsys):
    (tmp_path / "a.ipynb").write_text("not json", encoding="utf-8")
    (tmp_path / "b.ipynb").write_text("  \n", encoding="utf-8")
    assert main(["grade", str(tmp_path), "--timeout", "5", "--csv", str(tmp_path / "g.csv")]) == 0
    out = capsys.readouterr().out
    assert "broken JSON" in out and "empty file" in out
    assert (tmp_path / "g.csv").exists()
    assert main(["grade", str(tmp_path / "gone.ipynb"), "--csv", ""]) == 0
    assert "not found" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main(["grade", str(tmp_path / "empty"), "--csv", ""]) == 2
