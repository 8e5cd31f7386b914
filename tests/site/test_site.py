"""The website edition: `encoder-course site` builds it offline, and every page works in headless Chromium.

The site is built once (with the command a maintainer runs) into a temporary folder and served on
127.0.0.1. Every page is opened once with every request to another host refused (a page that needs the
internet shows up as a blocked request or a console error), then looked at in four ways: 1280 x 800 and
390 x 844 (a phone), light and dark. In each, axe-core (from the axe-playwright-python package) checks the
page, and the tests below read what was measured: sideways scrolling, figure sharpness, links between the
notebooks. The menu, a quiz, the copy buttons and the enlarged figures are then used as a reader would.

Needs Debian's chromium at /usr/bin/chromium, the playwright package (it never downloads a browser), the
site builder (`pip install -r requirements-site.txt`) and axe-playwright-python; without them the tests
that need them are skipped, saying why.
"""

from __future__ import annotations

import dataclasses
import functools
import html
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

from encoder_course.notebook_tools.learner_versions import stub_source
from encoder_course.quizzes import quiz as quiz_module
from encoder_course.site import build as site_module
from encoder_course.site.links import Linker
from encoder_course.site.quiz_pages import quiz_html, quiz_number

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
NOTEBOOKS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
STEMS = [nb.stem for nb in NOTEBOOKS]
WIDE, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}
LOOKS = [(size, scheme) for size in ("wide", "phone") for scheme in ("light", "dark")]
SIZES = {"wide": WIDE, "phone": PHONE}
# What the site command must not import: the model and the figures (MyST-NB itself needs IPython).
HEAVY = ("torch", "matplotlib", "ipywidgets")

browser_test = pytest.mark.browser  # the tests that open the site in Chromium

# The build, as `encoder-course site --out DIR` runs it, then the heavy modules it imported.
BUILD = ("import json, sys\n"
         "from encoder_course.cli import main\n"
         "code = main(['site', '--out', sys.argv[1]])\n"
         f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
         "sys.exit(code)\n")


def _builder_missing() -> str | None:
    for module in ("sphinx", "myst_nb", "sphinx_book_theme"):
        if importlib.util.find_spec(module) is None:
            return f"the site builder is not installed ({module} missing): pip install -r requirements-site.txt"
    try:
        site_module.mathjax_source()
    except site_module.SiteError as exc:
        return str(exc)
    return None


def _axe_source() -> str:
    """axe-core's script, as the axe-playwright-python package ships it (nothing is downloaded)."""
    if importlib.util.find_spec("axe_playwright_python") is None:
        pytest.skip("axe-core is not installed: pip install -r requirements-test.txt (axe-playwright-python)")
    from importlib.resources import files

    return files("axe_playwright_python").joinpath("axe.min.js").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site as `encoder-course site --out DIR` builds it: its folder, what it printed, what it imported."""
    missing = _builder_missing()
    if missing:
        pytest.skip(missing)
    out = tmp_path_factory.mktemp("site") / "html"
    done = subprocess.run([sys.executable, "-c", BUILD, str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"encoder-course site failed:\n{done.stdout}\n{done.stderr}"
    *printed, imported = done.stdout.strip().splitlines()
    return {"dir": out, "stdout": "\n".join(printed), "imported": json.loads(imported)}


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
    """Every page opened once, offline: what it logged, requested, linked and showed, in the four looks.

    All pages are opened together and stay open, and axe runs on all of them at once in each look: each
    page has its own renderer process, so the machine's cores share the work.
    """
    axe = _axe_source()
    names = sorted(p.name for p in site["dir"].glob("*.html"))
    context = browser.new_context(viewport=WIDE, color_scheme="light", reduced_motion="reduce")
    try:
        started = {name: _start(context, server, name) for name in names}
        opened = {name: (page, _look_at(page, seen, axe)) for name, (page, seen) in started.items()}
        for size, scheme in LOOKS:
            resized = [page.set_viewport_size(SIZES[size]) for page, _ in opened.values()
                       if page.viewport_size != SIZES[size]]
            for page, _ in opened.values():
                # Reduced motion: no colour transitions, so axe measures the colours the theme settles on.
                page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
            if resized:
                time.sleep(0.4)  # the theme's resize handlers wait 300 ms
            for page, seen in opened.values():
                page.wait_for_function(f"document.documentElement.dataset.theme === '{scheme}'", timeout=5_000)
                seen[size, scheme] = {
                    "scroll": page.evaluate("[document.documentElement.scrollWidth, "
                                            "document.documentElement.clientWidth]"),
                    "sizes": page.evaluate(IMAGE_SIZES_JS),
                    "code_contrast": page.evaluate(CODE_CONTRAST_JS),
                    "wide_code": page.evaluate(WIDE_CODE_JS),
                }
                seen[size, scheme]["layout_kept"] = page.evaluate(SET_CODE_ASIDE_JS)
                # Started on a timer, so this call returns at once and the next page's renderer can start too.
                page.evaluate("dark => { window.ecAxe = new Promise(done => "
                              "setTimeout(() => (" + AXE_JS + ")(dark).then(done), 0)); }", scheme == "dark")
            for page, seen in opened.values():
                seen[size, scheme]["axe"] = page.evaluate("window.ecAxe")
                seen[size, scheme]["code_back"] = page.evaluate(PUT_CODE_BACK_JS)
        return {name: seen for name, (_, seen) in opened.items()}
    finally:
        context.close()


def _start(context, base: str, name: str):
    """A page on its way, with every request to another host refused and every problem noted."""
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
    page.goto(f"{base}/{name}", wait_until="commit")
    return page, seen


def _look_at(page, seen: dict, axe: str) -> dict:
    """What a loaded page shows at 1280 px in light; then axe is put on it."""
    page.wait_for_load_state("load")
    if page.locator(".math").count():  # MathJax typesets after load
        try:
            page.wait_for_function("document.querySelectorAll('mjx-container').length >= "
                                   "document.querySelectorAll('.math').length", timeout=20_000)
        except Exception:  # noqa: BLE001 - a timeout: test_equations_are_rendered reports what is missing
            pass
    seen["images"] = page.evaluate(IMAGES_JS)
    seen["links"] = page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    seen["math"] = page.locator(".math").count()
    seen["typeset"] = page.locator("mjx-container").count()
    seen["math_errors"] = page.locator("mjx-merror, [data-mml-node='merror']").count()
    seen["text"] = page.locator("article").first.inner_text() if page.locator("article").count() else ""
    seen["code"] = page.evaluate("Array.from(document.querySelectorAll('article pre')).map(p => p.textContent)")
    seen["output_lines"] = page.evaluate("Array.from(document.querySelectorAll('article .cell_output pre'))"
                                         ".filter(p => !p.closest('details'))"
                                         ".map(p => p.textContent.replace(/\\n$/, '').split('\\n').length)")
    seen["folds"] = page.locator("article .cell_output details").count()
    seen["nav"] = page.evaluate("Array.from(document.querySelectorAll('.bd-sidebar-primary nav a.reference'))"
                                ".map(a => a.href)")
    seen["solutions"] = page.evaluate("Array.from(document.querySelectorAll('details.ec-solution')).map(d => d.open)")
    seen["pass_lines"] = page.locator(".ec-pass").count()
    seen["widget_notes"] = page.locator(".ec-widget-note").count()
    seen["quiz_questions"] = page.locator("form.ec-quiz fieldset.ec-question").count()
    seen["pagebar_links"] = page.evaluate("Array.from(document.querySelectorAll('.ec-pagebar a'))"
                                          ".map(a => [a.textContent.trim(), a.href, a.hasAttribute('download')])")
    seen["unlinked_mentions"] = page.evaluate(MENTIONS_JS, STEMS)
    seen["copy_buttons"] = page.evaluate("[document.querySelectorAll('article div.highlight').length, "
                                         "document.querySelectorAll('article div.highlight > button.ec-copy').length]")
    page.add_script_tag(content=axe)
    return seen


IMAGES_JS = """async () => {
    const images = Array.from(document.images);
    images.forEach(i => { i.loading = 'eager'; });
    await Promise.all(images.map(i => i.decode().catch(() => null)));
    return images.map(i => ({src: i.getAttribute('src'), width: i.naturalWidth, alt: i.getAttribute('alt'),
                              inArticle: !!i.closest('article')}));
}"""

WIDE_CODE_JS = """Array.from(document.querySelectorAll('article pre')).filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => p.textContent.split('\\n').find(line => line.length > 60) || p.textContent.slice(0, 80))"""

IMAGE_SIZES_JS = """Array.from(document.querySelectorAll('article .cell_output img')).map(i =>
    [i.getAttribute('src'), i.naturalWidth, i.getBoundingClientRect().width])"""

# While axe runs, the code and output blocks lie empty, each box kept at its size. axe leaves them out anyway
# (AXE_JS), but it still walks every element of the page, and their token spans are three quarters of a
# notebook page's elements: emptied, a look's axe run took half the time (09_cost: 1.6 s against 0.8 s), with
# every other element where it was. SET_CODE_ASIDE_JS returns the page's height before and after, which must
# match; PUT_CODE_BACK_JS puts every block's content back and returns whether the page has all its elements again.
SET_CODE_ASIDE_JS = """() => {
  const before = [document.documentElement.scrollHeight, document.querySelectorAll('*').length];
  window.ecAside = Array.from(document.querySelectorAll('article pre')).map(pre => {
    const box = pre.getBoundingClientRect(), kept = document.createDocumentFragment(), style = pre.style.cssText;
    pre.style.boxSizing = 'border-box';
    pre.style.height = box.height + 'px';
    pre.style.width = box.width + 'px';
    while (pre.firstChild) kept.appendChild(pre.firstChild);
    return [pre, kept, style];
  });
  window.ecBefore = before;
  return before[0] === document.documentElement.scrollHeight;
}"""
PUT_CODE_BACK_JS = """() => {
  for (const [pre, kept, style] of window.ecAside) { pre.appendChild(kept); pre.style.cssText = style; }
  return document.querySelectorAll('*').length === window.ecBefore[1]
    && document.documentElement.scrollHeight === window.ecBefore[0];
}"""

AXE_JS = """(colours => {
  // The rules that can find a serious or critical problem (the others report moderate or minor ones only),
  // with two that axe leaves out by default: names that match labels (WCAG 2.5.3) and target size (2.5.8).
  // For the dark theme only the rules about colour: nothing else on the page differs. Code and output blocks
  // are measured by CODE_CONTRAST_JS (thousands of token spans, a few colours: far quicker there), and
  // MathJax's SVG has no text to measure.
  const rules = axe._audit.rules.filter(r => ((r.enabled && !r.tags.includes('experimental'))
      || r.id === 'label-content-name-mismatch' || r.id === 'target-size')
      && ['serious', 'critical'].includes(r.impact) && (!colours || r.tags.includes('cat.color'))).map(r => r.id);
  return axe.run({exclude: [['article pre'], ['mjx-container']]},
                 {resultTypes: ['violations'], preload: false, runOnly: {type: 'rule', values: rules}})
    .then(r => r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
      .map(v => `${v.id} (${v.impact}): ` + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')));
})"""

CODE_CONTRAST_JS = """() => {
  // WCAG contrast of every colour of text in the code and output blocks against the block's background.
  const rgb = c => (c.match(/[\\d.]+/g) || [0, 0, 0]).map(Number);
  const lum = c => { const [r, g, b] = c.slice(0, 3).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const background = el => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
    if (c.length < 4 || c[3] > 0) return c; } return [255, 255, 255]; };
  const seen = new Map();
  for (const pre of document.querySelectorAll('article pre')) {
    const bg = background(pre);
    for (const el of [pre, ...pre.querySelectorAll('span')]) {
      if (!el.textContent.trim()) continue;
      const fg = rgb(getComputedStyle(el).color);
      const key = `${fg} on ${bg}`;
      if (seen.has(key)) continue;
      const [a, b] = [lum(fg), lum(bg)];
      seen.set(key, [(Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), el.className]);
    }
  }
  return Array.from(seen.entries());
}"""

MENTIONS_JS = """stems => {
  // Every "notebook 03", "notebooks 04, 06 and 05", "02 · attention" in the page's prose, with each number
  // that is not inside a link.
  const skip = 'pre, code, script, style, mjx-container, h1, .headerlink';
  const article = document.querySelector('article');
  if (!article) return [];
  let text = '';
  const linked = [];
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    const part = parent && !parent.closest(skip) ? node.data : ' ';
    const inLink = Boolean(parent && parent.closest('a[href]'));
    text += part;
    for (let i = 0; i < part.length; i++) linked.push(inLink);
  }
  const bad = [];
  const report = (at, end) => bad.push(text.slice(Math.max(0, at - 40), end + 10).replace(/\\s+/g, ' '));
  const number = '\\\\d\\\\d(?:_[a-z0-9_]+)?';
  const mention = new RegExp(`\\\\b[Nn]otebooks?\\\\s+${number}\\\\b` +
                             `(?:(?:\\\\s*,\\\\s*|\\\\s*[-–]\\\\s*|\\\\s+(?:and|or|to)\\\\s+)${number}\\\\b)*`, 'g');
  for (const m of text.matchAll(mention)) {
    for (const n of m[0].matchAll(/\\d\\d/g)) if (!linked[m.index + n.index]) report(m.index, m.index + m[0].length);
  }
  for (const m of text.matchAll(/\\b(\\d\\d) · ([a-z][a-z0-9_]*)\\b/g)) {
    if (stems.includes(`${m[1]}_${m[2]}`) && !linked[m.index]) report(m.index, m.index + m[0].length);
  }
  return bad;
}"""


def _ids(path: Path) -> set[str]:
    return set(re.findall(r'\sid="([^"]+)"', path.read_text(encoding="utf-8")))


def _stem_pages() -> list[str]:
    return [f"{nb.stem}.html" for nb in NOTEBOOKS]


def _page(browser, server, name: str, size: str = "wide", scheme: str = "light", **options):
    context = browser.new_context(viewport=SIZES[size], color_scheme=scheme, **options)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/{name}", wait_until="load")
    page.errors = errors
    return context, page


# -- the build ------------------------------------------------------------------------------------

@browser_test
def test_site_builds_one_page_per_notebook_the_landing_page_and_the_guides(site):
    # How long the build takes belongs to the benchmark (the builder prints its own time), not to a test.
    assert re.search(r"Built \d+ pages in [\d.]+ s", site["stdout"]), site["stdout"]
    pages = site_module.content_pages(site["dir"])
    assert len(pages) == len(NOTEBOOKS) + 4, pages
    assert set(pages) == {"index.html", "teachers.html", "maintainers.html", "platforms.html", *_stem_pages()}
    assert (site["dir"] / ".nojekyll").exists(), "GitHub Pages would hide _static without .nojekyll"
    assert not (site["dir"] / ".doctrees").exists()


@browser_test
def test_the_site_command_imports_no_torch_and_no_plotting(site):
    assert site["imported"] == [], f"`encoder-course site` imported {site['imported'][:5]}"


@browser_test
def test_every_notebook_can_be_downloaded_as_the_learner_version(site):
    for notebook in NOTEBOOKS:
        copy = site["dir"] / "notebooks" / notebook.name
        assert copy.read_bytes() == (ROOT / "notebooks" / notebook.name).read_bytes(), notebook.name


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
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_figures_have_at_least_twice_the_pixels_they_are_shown_at(visits, size):
    # A 2x PNG (the notebooks' figures) stays sharp on a HiDPI screen and when the reader zooms in.
    soft = [f"{name}: {src} {natural} px shown at {shown:.0f} px" for name, v in visits.items()
            for src, natural, shown in v[size, "light"]["sizes"] if shown and natural < 1.99 * shown]
    figures = sum(len(v[size, "light"]["sizes"]) for v in visits.values())
    assert figures > 20, "the notebooks' figures are missing"
    assert not soft, f"{len(soft)} of {figures} figures are soft (re-execute the notebooks):\n" + "\n".join(soft[:20])


@browser_test
@pytest.mark.parametrize("look", LOOKS, ids=lambda look: "-".join(look))
def test_no_page_scrolls_sideways(visits, look):
    wide = {name: v[look]["scroll"] for name, v in visits.items() if v[look]["scroll"][0] > v[look]["scroll"][1]}
    assert not wide, f"pages wider than the {look[0]} window (scroll width, window width): {wide}"


@browser_test
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_code_and_outputs_fit_the_column(visits, size):
    wide = {name: v[size, "light"]["wide_code"] for name, v in visits.items() if v[size, "light"]["wide_code"]}
    blocks = sum(len(v["code"]) for v in visits.values())
    assert blocks > 300, "the pages' code and output blocks are missing"
    assert not wide, f"blocks that scroll sideways: {json.dumps(wide, indent=1, ensure_ascii=False)[:3000]}"


@browser_test
@pytest.mark.parametrize("look", LOOKS, ids=lambda look: "-".join(look))
def test_axe_finds_no_serious_or_critical_problem(visits, look):
    moved = [name for name, v in visits.items() if not (v[look]["layout_kept"] and v[look]["code_back"])]
    assert not moved, f"emptying the code blocks for axe changed these pages' layout, or they lost elements: {moved}"
    found = {name: v[look]["axe"] for name, v in visits.items() if v[look]["axe"]}
    assert not found, json.dumps(found, indent=1)[:4000]


@browser_test
@pytest.mark.parametrize("look", LOOKS, ids=lambda look: "-".join(look))
def test_code_and_output_colours_have_enough_contrast(visits, look):
    measured = [(name, key, ratio, kind) for name, v in visits.items()
                for key, (ratio, kind) in v[look]["code_contrast"]]
    assert len(measured) > 20, "no highlighted code measured"
    low = [f"{name}: {key} {ratio:.2f}:1 ({kind})" for name, key, ratio, kind in measured if ratio < 4.5]
    assert not low, "\n".join(sorted(set(low)))


@browser_test
def test_every_mention_of_a_notebook_is_a_link(visits):
    unlinked = {name: v["unlinked_mentions"] for name, v in visits.items() if v["unlinked_mentions"]}
    assert not unlinked, json.dumps(unlinked, indent=1, ensure_ascii=False)
    mentions = sum(len(re.findall(r"[Nn]otebooks? \d\d", v["text"])) for v in visits.values())
    assert mentions > 50, "the check found no mentions to look at"


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
def test_code_shows_no_test_markers_and_every_block_has_a_copy_button(visits):
    for name, v in visits.items():
        assert not [c for c in v["code"] if "NBVAL_" in c], f"{name} shows the notebook tests' markers"
        blocks, buttons = v["copy_buttons"]
        assert buttons == blocks, f"{name}: {buttons} copy buttons for {blocks} code blocks"
    assert sum(v["copy_buttons"][0] for v in visits.values()) > 100


@browser_test
def test_long_outputs_are_folded(visits):
    for name, v in visits.items():
        long = [lines for lines in v["output_lines"] if lines > site_module.FOLD_LINES]
        assert not long, f"{name}: outputs of {long} lines are shown whole"
    assert sum(v["folds"] for v in visits.values()), "no long output was folded"


@browser_test
def test_navigation_lists_the_notebooks_in_course_order_then_the_guides(visits):
    guides = ["teachers.html", "maintainers.html", "platforms.html"]
    for name in ("index.html", "03_masks.html", "teachers.html", "maintainers.html"):
        nav = [href.split("#")[0].rsplit("/", 1)[-1] for href in visits[name]["nav"]]
        pages = [href for href in nav if href.endswith(".html") and href != "index.html"]
        assert pages == _stem_pages() + guides, (name, nav)


@browser_test
def test_search_finds_a_notebook(server, browser):
    context, page = _page(browser, server, "search.html?q=softmax")
    results = page.locator("#search-results a")
    results.first.wait_for(timeout=20_000)
    hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
    context.close()
    assert any("02_attention" in h for h in hrefs), hrefs


@browser_test
def test_light_and_dark_theme_follow_the_reader_and_have_a_switch(server, browser):
    seen = {}
    for scheme in ("light", "dark"):
        context, page = _page(browser, server, "01_tokens_and_positions.html", scheme=scheme)
        seen[scheme] = page.evaluate("document.documentElement.dataset.theme")
        switches = page.locator(".theme-switch-button").count()
        context.close()
        assert switches, "no light/dark switch in the header"
    assert seen == {"light": "light", "dark": "dark"}


# -- using it: the menu, a quiz, copying, enlarging -------------------------------------------------

VISIBLE_NOTEBOOK_LINKS = """Array.from(document.querySelectorAll('.bd-sidebar-primary nav a.reference')).filter(a => {
    const r = a.getBoundingClientRect(), style = getComputedStyle(a);
    return r.width > 0 && r.right > 0 && r.left < innerWidth && r.top < innerHeight && style.visibility !== 'hidden';
}).length"""
# In a dialog on a phone the list is longer than the screen: a link counts when scrolling brings it into view and
# it is the element a tap at its middle reaches.
REACHABLE_NOTEBOOK_LINKS = """Array.from(document.querySelectorAll('.bd-sidebar-primary nav a.reference')).filter(a => {
    a.scrollIntoView({block: 'nearest'});
    const r = a.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return false;
    const hit = document.elementFromPoint(r.left + Math.min(r.width / 2, 20), r.top + r.height / 2);
    return hit !== null && (hit === a || a.contains(hit));
}).length"""


@browser_test
@pytest.mark.parametrize("width,scheme", [(390, "light"), (390, "dark"), (900, "light"), (1280, "light"),
                                          (1280, "dark")])
def test_the_menu_button_shows_and_hides_the_notebook_list(server, browser, width, scheme):
    context = browser.new_context(viewport={"width": width, "height": 844}, color_scheme=scheme)
    page = context.new_page()
    page.goto(f"{server}/03_masks.html", wait_until="load")
    button = page.locator(".bd-header-article .primary-toggle")
    expanded = {"true": True, "false": False}
    before, was = page.evaluate(VISIBLE_NOTEBOOK_LINKS), expanded[button.get_attribute("aria-expanded")]
    assert (before >= len(NOTEBOOKS)) == was == (width >= 960), (width, before, was)  # beside the text when wide
    button.click()
    shown = _settle(page, REACHABLE_NOTEBOOK_LINKS if width < 960 else VISIBLE_NOTEBOOK_LINKS,
                    lambda n: (n >= len(NOTEBOOKS)) if width < 960 else n == 0)
    assert expanded[button.get_attribute("aria-expanded")] is not was
    if width < 960:  # a dialog over the page, closed with Escape
        assert shown >= len(NOTEBOOKS), f"{width} px: the menu shows {shown} notebooks"
        page.keyboard.press("Escape")
    else:  # beside the text: the button hides the list, and shows it again
        assert shown == 0
        button.click()
    again = _settle(page, VISIBLE_NOTEBOOK_LINKS, lambda n: (n >= len(NOTEBOOKS)) == (width >= 960))
    assert (again >= len(NOTEBOOKS)) == (width >= 960), (width, again)
    assert page.get_attribute(".bd-header-article .primary-toggle", "aria-label")
    context.close()


def _settle(page, expression: str, done, seconds: float = 10.0):
    """Evaluate `expression` until `done(value)` holds or `seconds` pass; return the last value.

    A page answers a click after its transitions and promises settle, which on a busy machine takes longer than any
    fixed pause; the test then asserts on the value it settled to.
    """
    deadline = time.monotonic() + seconds
    while True:
        value = page.evaluate(expression)
        if done(value) or time.monotonic() > deadline:
            return value
        page.wait_for_timeout(50)


def _score(page) -> str:
    return page.locator("form.ec-quiz .ec-score").inner_text()


@browser_test
@pytest.mark.parametrize("look", LOOKS, ids=lambda look: "-".join(look))
def test_a_quiz_answered_on_the_page_scores_and_explains(server, browser, look):
    context, page = _page(browser, server, "02_attention.html", *look)
    bank = quiz_module.questions("02")
    questions = page.locator("form.ec-quiz fieldset.ec-question")
    assert questions.count() == len(bank)
    assert _score(page) == f"Score: 0 / {len(bank)} right on the first answer, {len(bank)} not answered yet."
    first = questions.nth(0)
    assert first.locator("legend code").inner_text() == "scores", "the bank's `scores` is shown as code"
    key = first.get_attribute("data-key")
    options = first.locator("label.ec-option")
    texts = [options.nth(i).locator(".ec-text").inner_text() for i in range(options.count())]
    assert sorted(texts) == sorted(bank[0].options) and not any(re.match(r"[A-Ha-h][.)] ", t) for t in texts)
    right = next(i for i in range(options.count()) if options.nth(i).locator("input").get_attribute("value") == key)
    wrong = (right + 1) % options.count()
    # A wrong first answer counts: the later right one does not change the score.
    options.nth(wrong).click()
    first.locator(".ec-check").click()
    assert first.locator(".ec-verdict").inner_text().startswith(f"✗ Not this one: the answer is {'ABCD'[right]}")
    assert first.locator(".ec-explain").is_visible()
    assert bank[0].explanation.split(";")[0][:40] in first.locator(".ec-explain").inner_text()
    assert first.locator("input:disabled").count() == options.count()
    assert _score(page) == f"Score: 0 / {len(bank)} right on the first answer, {len(bank) - 1} not answered yet."
    # The second question by keyboard only: arrows pick, Tab reaches Check, Enter answers.
    second = questions.nth(1)
    key = second.get_attribute("data-key")
    radios = second.locator("input[type=radio]")
    radios.nth(0).focus()
    page.keyboard.press("Space")
    steps = next(i for i in range(radios.count()) if radios.nth(i).get_attribute("value") == key)
    for _ in range(steps):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "ec-check"
    page.keyboard.press("Enter")
    assert second.locator(".ec-verdict").inner_text() == "✓ Right."
    assert _score(page) == f"Score: 1 / {len(bank)} right on the first answer, {len(bank) - 2} not answered yet."
    # What a screen reader is given: a named group per question, its feedback in a live region.
    assert second.evaluate("q => q.tagName === 'FIELDSET' && q.querySelector('legend').textContent.length > 10")
    assert second.locator(".ec-feedback").get_attribute("aria-live") == "polite"
    assert not page.errors
    context.close()


@browser_test
def test_every_notebook_page_has_its_quiz_from_the_bank(visits):
    for notebook in NOTEBOOKS:
        nb = nbformat.read(notebook, as_version=4)
        numbers = [quiz_number(c.source) for c in nb.cells if c.cell_type == "code"]
        expected = sum(len(quiz_module.questions(n)) for n in numbers if n in quiz_module.bank_modules())
        assert visits[f"{notebook.stem}.html"]["quiz_questions"] == expected, notebook.stem
    assert sum(v["quiz_questions"] for v in visits.values()) > 30


@browser_test
def test_a_copy_button_copies_the_code(server, browser):
    context, page = _page(browser, server, "02_attention.html", permissions=["clipboard-read", "clipboard-write"])
    block = page.locator("article .cell_input div.highlight").first
    block.hover()
    block.locator("button.ec-copy").click()
    # The button answers once the browser's clipboard promise settles, which a busy machine delays.
    said = _settle(page, "document.querySelector('article .cell_input div.highlight button.ec-copy').textContent",
                   lambda text: text != "Copy")
    assert said == "Copied"
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == block.locator("pre").inner_text().rstrip("\n")
    context.close()


@browser_test
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_a_figure_opens_enlarged(server, browser, size):
    context, page = _page(browser, server, "02_attention.html", size)
    figure = page.locator("article .cell_output a.ec-enlarge img").first
    figure.scroll_into_view_if_needed()
    shown = figure.bounding_box()["width"]
    figure.click()
    dialog = page.locator("dialog.ec-lightbox")
    assert dialog.evaluate("d => d.open")
    big = dialog.locator("img")
    assert big.get_attribute("alt") == figure.get_attribute("alt")
    assert big.evaluate("i => i.complete && i.naturalWidth > 0")
    assert big.bounding_box()["width"] > shown * 1.2, "the enlarged figure is no larger"
    page.keyboard.press("Escape")
    assert not dialog.evaluate("d => d.open")
    context.close()


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
    widgets = [o for c in cells if quiz_number(c.source) is None for o in c.get("outputs", [])
               if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]

    assert v["solutions"] == [False] * len(exercises), "each exercise: one solution, folded"
    for cell in exercises:  # the learner's stub, as `encoder-course learner` writes it
        stub = next(line for line in stub_source(cell.source).splitlines() if "NotImplementedError" in line)
        assert stub.strip() in v["text"]
    assert v["pass_lines"] == len(passing)
    if passing:
        assert "What you will see when your answer is right" in v["text"]
    assert v["widget_notes"] == len(widgets), "each widget: its picture or a plain note, and what it lets you change"
    assert "google.colab" not in v["text"], "the Colab set-up cell is not course content"
    links = {text: (href, download) for text, href, download in v["pagebar_links"]}
    assert links["Open in Colab"][0] == site_module.colab_url(notebook.stem)
    assert links["Open on Binder"][0] == site_module.binder_url(notebook.stem)
    assert links["Source on GitHub"][0] == site_module.repo_url(f"notebooks/solutions/{notebook.name}")
    href, download = links["Download the notebook"]
    assert href.endswith(f"/notebooks/{notebook.name}") and download, "the learner version, as a download"
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


def test_with_a_hub_the_bar_links_to_the_notebook_there_first():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 03 · Masks\n\nWhat you will do.")]
    hub = "https://hub.example.org"
    page = dataclasses.replace(_PAGE, hub=hub)
    bar = site_module.prepare_notebook(nb, page).nb.cells[0].source
    link = html.escape(site_module.hub_url("03_masks", hub))
    assert f'href="{link}">Open on your JupyterHub' in bar and bar.index(link) < bar.index("Open in Colab")
    assert "JupyterHub" not in site_module.prepare_notebook(nb, _PAGE).nb.cells[0].source


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


def test_prepare_hides_test_markers_and_folds_long_outputs():
    nb = nbformat.v4.new_notebook()
    long_text = "".join(f"line {i}\n" for i in range(45))
    nb.cells = [nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(x)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=long_text[:70]),
        nbformat.v4.new_output("stream", name="stdout", text=long_text[70:])])]
    (cell,) = site_module.prepare_notebook(nb, _PAGE).nb.cells
    assert cell.source == "print(x)"
    (output,) = cell.outputs  # the two parts of one stream, merged, then folded
    markup = output["data"]["text/html"]
    shown, folded = markup.split("<details>")
    assert "line 19" in shown and "line 20" not in shown
    assert "Show the other 25 lines" in folded and "line 44" in folded


def test_prepare_keeps_a_2x_figures_display_size_in_a_widget():
    nb = _widget_notebook(with_state=True)
    picture = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]["out"]["state"]
    picture["outputs"][0]["metadata"] = {"image/png": {"width": 471, "height": 246, "alt": "A bar chart."}}
    outputs = site_module.prepare_notebook(nb, _PAGE).nb.cells[-1].outputs
    assert outputs[0]["metadata"]["image/png"] == {"alt": "A bar chart.", "width": 471, "height": 246}


def test_prepare_turns_a_quiz_cell_into_the_quiz_from_its_bank():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('widgets.quiz("02")', metadata={"encoder_course": {"role": "quiz"}})]
    (cell,) = site_module.prepare_notebook(nb, _PAGE, Linker(STEMS)).nb.cells
    assert cell.cell_type == "markdown" and cell.source.startswith('<form class="ec-quiz" data-quiz="02"')
    assert cell.source.count("<fieldset") == len(quiz_module.questions("02"))


@pytest.mark.parametrize("number", sorted(quiz_module.bank_modules()))
def test_the_quiz_html_holds_each_question_of_the_bank_with_its_answer_key(number):
    bank = quiz_module.questions(number)
    markup = quiz_html(number)
    assert "\n\n" not in markup, "a blank line would end the markdown's HTML block"
    assert "`" not in re.sub(r"<pre.*?</pre>", "", markup, flags=re.S), "backticks are shown as <code>"
    questions = re.findall(r'<fieldset class="ec-question" data-key="(\d)">(.*?)</fieldset>', markup, re.S)
    assert len(questions) == len(bank)
    for (key, body), question in zip(questions, bank):
        options = re.findall(r'value="(\d)"><span class="ec-letter"></span><span class="ec-text">(.*?)</span>', body)
        assert len(options) == len(question.options)
        right = html.unescape(re.sub(r"<[^>]+>", "", dict(options)[key]))
        assert right == question.options[0].replace("`", "")
        assert 'aria-live="polite"' in body and "<legend>" in body
    firsts = [re.findall(r'value="(\d)"', body).index(key) for key, body in questions]
    assert len(bank) < 3 or set(firsts) != {0}, "the right option is not always first in the page's order"


def test_quiz_number_reads_the_cell():
    assert quiz_number('widgets.quiz("07")') == "07"
    assert quiz_number("widgets.quiz(notebook='11')") == "11"
    assert quiz_number("widgets.quiz()") == "14"
    assert quiz_number("print(1)") is None


def test_the_linker_links_every_form_of_mention_and_leaves_code_alone():
    linker = Linker(STEMS)
    text = ("See notebook 03, notebooks 04, 06 and 05, notebooks 02-04 and Notebook 10_training. "
            "*Measured in:* 02 · attention. Code `notebook 03` and $notebook 05$ and [notebook 07](x) stay.\n"
            "```python\n# notebook 01\n```\n| 01 | tokens_and_positions | ids |\nnotebook 99 is no notebook.")
    out = linker.markdown(text)
    for link in ("[notebook 03](03_masks.ipynb)", "[04](04_multi_head.ipynb), [06](06_feed_forward.ipynb) and "
                 "[05](05_residual_and_layernorm.ipynb)", "[02](02_attention.ipynb)-[04](04_multi_head.ipynb)",
                 "[Notebook 10_training](10_training.ipynb)", "[02 · attention](02_attention.ipynb)",
                 "| 01 | [tokens_and_positions](01_tokens_and_positions.ipynb) |"):
        assert link in out
    for kept in ("`notebook 03`", "$notebook 05$", "[notebook 07](x)", "# notebook 01\n", "notebook 99 is"):
        assert kept in out
    assert linker.html("(See 14 · review and notebook 01.)") == (
        '(See <a href="14_review.html">14 · review</a> and <a href="01_tokens_and_positions.html">notebook 01</a>.)')


def test_the_linker_links_quoted_section_names_to_their_headings():
    linker = Linker(STEMS, {"04_multi_head": ["4. Multi-head attention", "9. Why several heads?",
                                              "8. Cost: eight small heads vs one big head"]})
    out = linker.markdown('*Measured in:* 04 · multi_head, "Cost: eight small heads vs one big head", '
                          '"Why several heads?" and "A section it does not have".')
    assert out == ('*Measured in:* [04 · multi_head](04_multi_head.ipynb), "[Cost: eight small heads vs one big '
                   'head](04_multi_head.ipynb#8-cost-eight-small-heads-vs-one-big-head)", "[Why several heads?]'
                   '(04_multi_head.ipynb#9-why-several-heads)" and "A section it does not have".')
