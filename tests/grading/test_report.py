"""From a folder of submissions to the teacher's report page and an importable gradebook, in two commands
(`encoder-course grade`, `encoder-course report`): the page's numbers, mistakes and grid, the page offline
in a real browser at desktop and phone widths (axe-core: no serious or critical finding), and the Canvas and
Moodle layouts."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path

import pytest
from grading_helpers import RIGHT, SOLUTIONS, WRONG, learner, solved, write

from encoder_course.cli import main
from encoder_course.grading import report as R
from encoder_course.grading.grade import grade

pytestmark = pytest.mark.notebooks
CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class of five graded as a teacher would: the CSV, its details file beside it, the report's files."""
    base = tmp_path_factory.mktemp("class")
    folder = base / "submissions"
    write(folder, "ada/03_masks.ipynb", solved(padding_mask=RIGHT["padding_mask"], causal_mask=RIGHT["causal_mask"]))
    write(folder, "bob/03_masks.ipynb", solved(padding_mask=WRONG["padding_mask"], causal_mask=RIGHT["causal_mask"]))
    write(folder, "cy/03_masks.ipynb", solved(padding_mask=WRONG["padding_mask"], causal_mask=WRONG["causal_mask"]))
    write(folder, "dee/03_masks.ipynb", learner())
    (folder / "eve").mkdir()
    (folder / "eve" / "03_masks.ipynb").write_text("{not json", encoding="utf-8")
    csv_path = base / "grades.csv"
    log = io.StringIO()
    _, code = grade([folder], csv_path=csv_path, details_path=R.details_path_for(csv_path), solutions_dir=SOLUTIONS,
                    isolate="none", out=log)
    assert code == 0, log.getvalue()
    assert main(["report", str(csv_path), "--out", str(base / "report.html"), "--canvas", str(base / "canvas.csv"),
                 "--moodle", str(base / "moodle.csv")]) == 0
    return base


def test_the_details_carry_each_mistake_s_id_and_time(graded):
    details = {d["file"]: d for d in json.loads((graded / "grades.details.json").read_text(encoding="utf-8"))}
    assert details["bob/03_masks.ipynb"]["mistakes"] == {"padding_mask": "padding_mask/inverted"}
    assert details["dee/03_masks.ipynb"]["mistakes"]["causal_mask"] == "causal_mask/not-attempted"
    assert "padding_mask" not in details["ada/03_masks.ipynb"]["mistakes"]
    assert all(0 < t < 60 for t in details["ada/03_masks.ipynb"]["times"].values())


def test_the_page_gives_pass_rates_mistakes_the_grid_and_what_could_not_be_read(graded):
    page = (graded / "report.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert re.search(r"padding_mask\s+25%", text) and re.search(r"causal_mask\s+50%", text)
    assert re.search(r"2\s+×\s+padding_mask/inverted\s*:\s+Your padding_mask is inverted", text)
    assert "padding_mask/not-attempted" not in text  # (not attempted is not a mistake; the grid shows it)
    assert re.search(r"bob\s+1 / 2\s+✗ wrong\s+✓ passed", text)
    assert re.search(r"dee\s+0 / 2\s+– not attempted\s+– not attempted", text)
    assert re.search(r"Nothing passed yet \(2\): cy, dee", text)
    assert re.search(r"eve/03_masks.ipynb\s+broken JSON", text)
    assert re.search(r"padding_mask\s+4\s+\d+\.\d\d\s+\d+\.\d\d", text)  # run times
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing is requested from elsewhere


def test_canvas_gets_its_import_layout(graded):
    rows = list(csv.reader((graded / "canvas.csv").open(encoding="utf-8", newline="")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "03_masks"]
    assert rows[1] == ["    Points Possible", "", "", "", "", "2"]
    assert rows[2:] == [[s, "", "", s, "", m] for s, m in (("ada", "2"), ("bob", "1"), ("cy", "0"), ("dee", "0"))]


def test_moodle_gets_a_grade_and_a_feedback_column_per_notebook(graded):
    rows = list(csv.DictReader((graded / "moodle.csv").open(encoding="utf-8", newline="")))
    assert list(rows[0]) == ["Username", "03_masks", "03_masks feedback"]
    marks = {r["Username"]: (r["03_masks"], r["03_masks feedback"]) for r in rows}
    assert marks["ada"] == ("2", "all exercises passed")
    assert marks["bob"][0] == "1" and marks["bob"][1].startswith("padding_mask: wrong (Your padding_mask is inverted")
    assert marks["dee"] == ("0", "padding_mask: not attempted; causal_mask: not attempted")


def test_a_report_from_the_csv_alone_says_it_names_no_mistake(tmp_path, graded):
    (tmp_path / "grades.csv").write_bytes((graded / "grades.csv").read_bytes())
    klass = R.load(tmp_path / "grades.csv")
    page = R.build_html(klass)
    assert "No details file was found" in page and "No mistake was named" in page
    assert klass.status(next(r for r in klass.rows if r["student"] == "bob"), "padding_mask") == "failed"


def test_the_page_in_a_browser_offline_at_desktop_and_phone_widths(graded):
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    axe_module = pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed")
    axe = (Path(axe_module.__file__).parent / "axe.min.js").read_text(encoding="utf-8")
    url = (graded / "report.html").as_uri()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        try:
            for width, height in ((1280, 800), (390, 844)):
                page = browser.new_page(viewport={"width": width, "height": height})
                requested, errors = [], []
                page.on("request", lambda r, seen=requested: seen.append(r.url))
                page.on("console", lambda m, seen=errors: seen.append(m.text) if m.type == "error" else None)
                page.goto(url)
                assert requested == [url] and not errors, (requested, errors)
                assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scrolling
                page.add_script_tag(content=axe)
                found = page.evaluate("""() => axe.run({resultTypes: ['violations']}).then(r => r.violations
                    .filter(v => ['serious', 'critical'].includes(v.impact)).map(v => v.id + ': ' + v.help))""")
                assert not found, (width, found)
                page.close()
        finally:
            browser.close()


def test_resume_keeps_the_details_of_the_rows_it_keeps(tmp_path):
    from encoder_course.grading import grade as G

    details = tmp_path / "g.details.json"
    details.write_text(json.dumps([{"file": "a/03.ipynb", "mistakes": {"padding_mask": "padding_mask/inverted"}},
                                   {"file": "=b.ipynb", "mistakes": {}}, "not an entry"]), encoding="utf-8")
    kept = G.read_details(details, {"a/03.ipynb", "'=b.ipynb"})  # (the CSV's cells: a formula gets a quote)
    assert [d["file"] for d in kept] == ["a/03.ipynb", "=b.ipynb"]
    assert G.read_details(tmp_path / "missing.json", {"a/03.ipynb"}) == []
