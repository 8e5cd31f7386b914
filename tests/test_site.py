"""The website edition: `encoder-course site` builds it offline, and every page works in headless Chromium.

The site is built once (with the command a maintainer runs) into a temporary folder and served on
127.0.0.1. Every page is opened with every request to another host refused: a page that needs the
internet (a CDN for MathJax or the widgets) shows up as a blocked request or a console error.

Needs Debian's chromium at /usr/bin/chromium, the playwright package (it never downloads a browser) and
the site builder (`pip install -r requirements-site.txt`); without them the test is skipped, saying why.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from encoder_course.course import site as site_module
from encoder_course.course.learner_versions import stub_source

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
NOTEBOOKS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))

browser_test = pytest.mark.browser  # the tests that open the site in Chromium


def _builder_missing() -> str | None:
    for module in ("sphinx", "myst_nb", "sphinx_book_theme"):
        if importlib.util.find_spec(module) is None:
            return f"the site builder is not installed ({module} missing): pip install -r requirements-site.txt"
    try:
        site_module.mathjax_source()
    except site_module.SiteError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site as `encoder-course site --out DIR` builds it, and how long the build took."""
    missing = _builder_missing()
    if missing:
        pytest.skip(missing)
    out = tmp_path_factory.mktemp("site") / "html"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "encoder_course.course.cli", "site", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, f"encoder-course site failed:\n{done.stdout}\n{done.stderr}"
    return {"dir": out, "seconds": seconds, "stdout": done.stdout}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_Quiet, directory=str(site["dir"]))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def visits(site, server, browser):
    """Every page of the site opened once, offline: what it logged, requested, linked and showed."""
    pages = sorted(p.name for p in site["dir"].glob("*.html"))
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    results = {}
    try:
        for name in pages:
            results[name] = _visit(context, server, name)
    finally:
        context.close()
    return results


def _visit(context, base: str, name: str) -> dict:
    page = context.new_page()
    seen = {"console": [], "blocked": [], "failed": [], "bad_status": []}

    def route(r):
        if r.request.url.startswith(base + "/"):
            r.continue_()
        else:
            seen["blocked"].append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: seen["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["console"].append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: r.url.startswith(base) and seen["failed"].append(r.url))
    page.on("response", lambda r: r.status >= 400 and seen["bad_status"].append(f"{r.status} {r.url}"))
    page.goto(f"{base}/{name}", wait_until="load")
    if page.locator(".math").count():  # MathJax typesets after load
        try:
            page.wait_for_function("document.querySelectorAll('mjx-container').length >= "
                                   "document.querySelectorAll('.math').length", timeout=20_000)
        except Exception:  # noqa: BLE001 - a timeout: test_equations_are_rendered reports what is missing
            pass
    seen["images"] = page.evaluate("""async () => {
        const images = Array.from(document.images);
        images.forEach(i => { i.loading = 'eager'; });
        await Promise.all(images.map(i => i.decode().catch(() => null)));
        return images.map(i => ({src: i.getAttribute('src'), width: i.naturalWidth, alt: i.getAttribute('alt'),
                                  inArticle: !!i.closest('article')}));
    }""")
    seen["links"] = page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    seen["math"] = page.locator(".math").count()
    seen["typeset"] = page.locator("mjx-container").count()
    seen["math_errors"] = page.locator("mjx-merror, [data-mml-node='merror']").count()
    seen["text"] = page.locator("article").first.inner_text() if page.locator("article").count() else ""
    seen["nav"] = page.evaluate("Array.from(document.querySelectorAll('.bd-sidebar-primary nav a.reference'))"
                                ".map(a => a.href)")
    seen["solutions"] = page.evaluate("Array.from(document.querySelectorAll('details.ec-solution')).map(d => d.open)")
    seen["pass_lines"] = page.locator(".ec-pass").count()
    seen["widget_notes"] = page.locator(".ec-widget-note").count()
    seen["pagebar_links"] = page.evaluate("Array.from(document.querySelectorAll('.ec-pagebar a')).map(a => a.href)")
    page.close()
    return seen


def _ids(path: Path) -> set[str]:
    return set(re.findall(r'\sid="([^"]+)"', path.read_text(encoding="utf-8")))


def _stem_pages() -> list[str]:
    return [f"{nb.stem}.html" for nb in NOTEBOOKS]


# -- the build ------------------------------------------------------------------------------------

@browser_test
def test_site_builds_one_page_per_notebook_plus_two(site):
    # How long the build takes belongs to the benchmark (the builder prints its own time), not to a test.
    assert re.search(r"Built \d+ pages in [\d.]+ s", site["stdout"]), site["stdout"]
    pages = site_module.content_pages(site["dir"])
    assert len(pages) == len(NOTEBOOKS) + 2, pages
    assert set(pages) == {"index.html", "teachers.html", *_stem_pages()}
    assert (site["dir"] / ".nojekyll").exists(), "GitHub Pages would hide _static without .nojekyll"
    assert not (site["dir"] / ".doctrees").exists()


def test_site_refuses_a_folder_that_holds_something_else(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(site_module.SiteError, match="not empty"):
        site_module.build_site(tmp_path, ROOT)
    assert (tmp_path / "notes.txt").read_text() == "mine"


# -- every page in the browser --------------------------------------------------------------------

@browser_test
def test_every_page_loads_offline_without_console_errors(visits):
    problems = {name: {k: v[k] for k in ("console", "blocked", "failed", "bad_status") if v[k]}
                for name, v in visits.items()}
    problems = {name: p for name, p in problems.items() if p}
    assert not problems, json.dumps(problems, indent=1)[:4000]


@browser_test
def test_every_image_loads_and_has_alt_text(visits):
    broken, no_alt = [], []
    for name, v in visits.items():
        for image in v["images"]:
            if image["width"] == 0:
                broken.append(f"{name}: {image['src']}")
            alt = (image["alt"] or "").strip()
            if image["inArticle"] and (not alt or re.search(r"\.(png|svg|jpe?g)$", alt)):
                no_alt.append(f"{name}: {image['src']} alt={alt!r}")
    assert not broken, "images that did not load:\n" + "\n".join(broken)
    assert not no_alt, "figures without alt text:\n" + "\n".join(no_alt)


@browser_test
def test_every_internal_link_resolves(site, server, visits):
    out, bad = site["dir"], []
    for name, v in visits.items():
        for href in v["links"]:
            if not href.startswith(server + "/"):
                continue
            parts = urlsplit(href)
            target = out / unquote(parts.path).lstrip("/")
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                bad.append(f"{name} -> {href} (no such file)")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _ids(target):
                bad.append(f"{name} -> {href} (no such anchor)")
    assert not bad, "\n".join(sorted(set(bad)))


@browser_test
def test_equations_are_rendered(visits):
    with_math = {name: v for name, v in visits.items() if v["math"]}
    assert any(name.startswith("02_") for name in with_math), "the attention notebook's equations are missing"
    for name, v in with_math.items():
        assert v["typeset"] >= v["math"], f"{name}: {v['typeset']} of {v['math']} equations typeset"
        assert v["math_errors"] == 0, f"{name}: MathJax could not read {v['math_errors']} equations"


@browser_test
def test_navigation_lists_the_notebooks_in_course_order_then_teachers(visits):
    for name in ("index.html", "03_masks.html", "teachers.html"):
        nav = [href.split("#")[0].rsplit("/", 1)[-1] for href in visits[name]["nav"]]
        pages = [href for href in nav if href.endswith(".html") and href != "index.html"]
        assert [p for p in pages if p != "teachers.html"][: len(NOTEBOOKS)] == _stem_pages(), (name, nav)
        assert "teachers.html" in pages


@browser_test
def test_search_finds_a_notebook(server, browser):
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{server}/search.html?q=softmax", wait_until="load")
    results = page.locator("#search-results a")
    results.first.wait_for(timeout=20_000)
    hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
    context.close()
    assert any("02_attention" in h for h in hrefs), hrefs


@browser_test
def test_light_and_dark_theme_follow_the_reader_and_have_a_switch(server, browser):
    seen = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme)
        page = context.new_page()
        page.goto(f"{server}/01_tokens_and_positions.html", wait_until="load")
        seen[scheme] = page.evaluate("document.documentElement.dataset.theme")
        switches = page.locator(".theme-switch-button").count()
        context.close()
        assert switches, "no light/dark switch in the header"
    assert seen == {"light": "light", "dark": "dark"}


# -- what the pages say ---------------------------------------------------------------------------

@browser_test
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_page_shows_exercises_widgets_and_links(notebook, visits):
    v = visits[f"{notebook.stem}.html"]
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    role = [(c.metadata.get("encoder_course") or {}).get("role") for c in cells]
    exercises = [c for c, r in zip(cells, role) if r == "exercise" and "### BEGIN SOLUTION" in c.source]
    passing = [c for c, r in zip(cells, role)
               if r == "check" and any("✓" in o.get("text", "") for o in c.get("outputs", []))]
    widgets = [o for c in cells for o in c.get("outputs", []) if "application/vnd.jupyter.widget-view+json"
               in o.get("data", {})]

    assert v["solutions"] == [False] * len(exercises), "each exercise: one solution, folded"
    for cell in exercises:  # the learner's stub, as `encoder-course student` writes it
        stub = next(line for line in stub_source(cell.source).splitlines() if "NotImplementedError" in line)
        assert stub.strip() in v["text"]
    assert v["pass_lines"] == len(passing)
    if passing:
        assert "What you will see when your answer is right" in v["text"]
    assert v["widget_notes"] == len(widgets), "each widget: its picture or a plain note, and what it lets you change"
    assert "google.colab" not in v["text"], "the Colab set-up cell is not course content"
    assert site_module.colab_url(notebook.stem) in v["pagebar_links"]
    assert site_module.binder_url(notebook.stem) in v["pagebar_links"]
    assert any(f"/notebooks/{notebook.name}" in href for href in v["pagebar_links"]), "the learner version"
    assert re.search(r"\d+ min reading", v["text"]), "the reading time from README's course map"


@browser_test
def test_landing_page_has_the_course_map_and_how_to_start(visits):
    text = visits["index.html"]["text"]
    for needed in ("The course map", "Start locally", "pip install -r requirements.txt", "Colab", "Binder"):
        assert needed in text
    assert "for anyone who knows a little PyTorch" in text  # README's "for whom"
    assert re.search(r"about \d+ h \d\d min of reading", text)
    linked = {href.rsplit("/", 1)[-1].split("#")[0] for href in visits["index.html"]["links"]}
    assert set(_stem_pages()) <= linked, "the map links every notebook's page"


@browser_test
def test_teacher_page_covers_grading_and_releasing(visits):
    text = visits["teachers.html"]["text"]
    assert "encoder-course grade" in text
    assert "nbgrader" in text and "encoder-course release" in text


# -- the preparation of one notebook (no browser, no builder needed) --------------------------------

_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==")
_PAGE = site_module.Page("03_masks", "03 · Masks", "masks", "25 min", "`padding_mask`")


def _figure(alt: str | None = None):
    meta = {"image/png": {"alt": alt}} if alt else {}
    return nbformat.v4.new_output("display_data", data={"image/png": _PNG, "text/plain": "<Figure>"}, metadata=meta)


def _widget_notebook(with_state: bool, picture_alt: str | None = None):
    nb = nbformat.v4.new_notebook()
    view = {"model_id": "box", "version_major": 2, "version_minor": 0}
    cell = nbformat.v4.new_code_cell("widgets.explore_padding()", outputs=[nbformat.v4.new_output(
        "execute_result", data={"application/vnd.jupyter.widget-view+json": view,
                                "text/plain": "VBox(children=(Checkbox(value=False, description='use mask'),"},
        execution_count=1)])
    nb.cells = [nbformat.v4.new_markdown_cell("# 03 · Masks\n\nIntro."), cell]
    if with_state:
        picture = _figure(picture_alt)
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
            "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_check", "IPY_MODEL_slide",
                                                                      "IPY_MODEL_out"]}},
            "check": {"model_name": "CheckboxModel", "state": {"description": "use mask", "value": False}},
            "slide": {"model_name": "IntSliderModel", "state": {"description": "padding", "value": 3,
                                                                "min": 0, "max": 124}},
            "out": {"model_name": "OutputModel", "state": {"outputs": [picture]}},
        }}}
    return nb


def test_prepare_drops_the_colab_cell_and_puts_the_bar_under_the_title():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('import sys\nif "google.colab" in sys.modules:\n    %pip install x'),
                nbformat.v4.new_markdown_cell("# 03 · Masks\n\nWhat you will do.")]
    cells = site_module.prepare_notebook(nb, _PAGE).nb.cells
    assert "google.colab" not in "".join(c.source for c in cells)
    assert cells[0].source.startswith("# 03 · Masks") and "ec-pagebar" in cells[0].source
    assert "25 min reading" in cells[0].source and site_module.colab_url("03_masks") in cells[0].source
    assert cells[1].source == "What you will do."


def test_prepare_shows_the_learner_stub_a_folded_solution_and_the_pass_line():
    solution = "def padding_mask(ids, pad):\n    ### BEGIN SOLUTION\n    return ids != pad\n    ### END SOLUTION"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(solution, metadata={"encoder_course": {"role": "exercise",
                                                                         "exercise": "padding_mask"}}),
        nbformat.v4.new_code_cell("checks.check_padding_mask(padding_mask)", outputs=[nbformat.v4.new_output(
            "stream", name="stdout", text="✓ padding_mask: all checks passed\n")],
            metadata={"encoder_course": {"role": "check", "exercise": "padding_mask", "points": 1}}),
    ]
    cells = site_module.prepare_notebook(nb, _PAGE).nb.cells
    code = [c for c in cells if c.cell_type == "code"]
    assert code[0].source == stub_source(solution)
    folded = next(c.source for c in cells if "<details" in c.source)
    assert "return ids != pad" in folded and "BEGIN SOLUTION" not in folded
    html_out = code[1].outputs[0]["data"]["text/html"]
    assert "What you will see when your answer is right" in html_out and "✓ padding_mask" in html_out


@pytest.mark.parametrize("alt", [None, "Attention weights of the last layer."])
def test_prepare_turns_a_widget_into_its_first_picture_and_what_it_lets_you_change(alt):
    prepared = site_module.prepare_notebook(_widget_notebook(with_state=True, picture_alt=alt), _PAGE)
    assert "widgets" not in prepared.nb.metadata, "widget state would make the page load a widget manager"
    outputs = prepared.nb.cells[-1].outputs
    assert "application/vnd.jupyter.widget-view+json" not in outputs[0]["data"]
    assert outputs[0]["data"]["image/png"] == _PNG
    note = outputs[-1]["data"]["text/html"]
    assert "use mask</strong> (on or off)" in note and "padding</strong> (0 to 124)" in note
    assert "use mask = off, padding = 3" in note
    (stored_alt,) = prepared.alt_texts.values()
    assert stored_alt == (alt or "The first picture the live widget draws, for use mask = off, padding = 3.")
    assert not prepared.widgets_without_picture


def test_prepare_says_plainly_when_a_widget_has_no_stored_picture():
    prepared = site_module.prepare_notebook(_widget_notebook(with_state=False), _PAGE)
    note = prepared.nb.cells[-1].outputs[0]["data"]["text/html"]
    assert "stores no picture of this widget" in note and "use mask" in note
    assert prepared.widgets_without_picture == ["03_masks: widgets.explore_padding()"]


def test_prepare_keeps_a_figures_alt_text_or_falls_back_to_the_notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("fig", outputs=[_figure("Two heatmaps.")]),
                nbformat.v4.new_code_cell("fig2", outputs=[_figure()])]
    nb.cells[1].outputs[0]["data"]["image/png"] = _PNG.replace("==", "A=")  # another picture
    prepared = site_module.prepare_notebook(nb, _PAGE)
    assert sorted(prepared.alt_texts.values()) == ["Figure from notebook 03 (03 · Masks)", "Two heatmaps."]


def test_readme_course_map_gives_every_notebook_its_reading_time():
    table = site_module.course_map((ROOT / "README.md").read_text(encoding="utf-8"))
    for notebook in NOTEBOOKS:
        assert re.fullmatch(r"\d+ min", table[notebook.stem[:2]]["reading"]), notebook.stem
