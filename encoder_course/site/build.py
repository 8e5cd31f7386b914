"""The course as a static website, built from the solution notebooks' stored outputs.

``encoder-course site --out DIR`` (or :func:`build_site`) turns ``notebooks/solutions/NN_*.ipynb`` into a
website with Sphinx, MyST-NB and the Sphinx Book Theme (search and a light/dark switch come with the
theme). Nothing is executed: every page shows the outputs stored when the solution was last run, so the
build takes seconds, needs no kernel and no network, imports neither torch nor matplotlib, and the site
loads nothing from the internet (MathJax is copied in from the pinned ``sphinx-mathjax-offline`` package).
The builder times itself (:attr:`SiteReport.seconds`, printed by the command).

Before Sphinx sees a notebook, :func:`prepare_notebook` makes it readable on a page:

- the Colab set-up cell is dropped, and a bar under the title gives the reading time (from README's course
  map) and links to download the notebook (the learner version, copied into the site's ``notebooks/``),
  to open it on Colab and Binder, and to its source on GitHub;
- an exercise cell shows the learner's stub (exactly as ``encoder-course learner`` writes it), with the
  solution folded under it; its check cell's pass line is labelled as what you see when you are right;
- a widget becomes the picture of its first state and a line saying what the live widget lets you change
  (:mod:`.site_widgets`); the quiz is built from its question bank and works on the page (:mod:`.site_quiz`);
- every mention of another notebook becomes a link (:mod:`.site_links`); lines only the notebook tests read
  (``# NBVAL_CHECK_OUTPUT``) are dropped; text outputs over :data:`FOLD_LINES` lines are folded;
- every figure keeps its alt text (``metadata["image/png"]["alt"]``, or a plain fallback) and its display
  size (a 2x PNG's ``width``), so it is sharp and a click opens it enlarged.

``files/encoder-course.js`` makes the menu open at every width (the pinned themes leave the Book
Theme's menu button without a handler), runs the quizzes, adds copy buttons and the enlarged figures;
``files/templates/`` names the theme's buttons; ``files/encoder-course.css`` keeps code, equations
and outputs inside the column and the course's colours above WCAG's 4.5:1.

A landing page comes from README (intro, course map, the two commands, for learners), and a page from each
guide in ``docs/`` (teachers, maintainers, platforms). This module is also the Sphinx extension that puts the alt texts
on the images (:func:`setup`).
"""

from __future__ import annotations

import html
import json
import posixpath
import re
import shutil
import string
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path

import nbformat

from ..notebook_tools import manifest
from ..notebook_tools.files import BRANCH, REPO_URL
from ..notebook_tools.learner_versions import BEGIN, END, find_root, solution_notebooks, stub_source
from ..notebook_tools.manifest import binder_url, colab_url, hub_url
from ..quizzes.quiz import bank_modules
from .links import Linker
from .outputs import WIDGET_STATE, WIDGET_VIEW, html_output, png_alt, png_hash, widget_outputs
from .quiz_pages import quiz_html, quiz_number

SITE_FILES = Path(__file__).with_name("files")
GUIDES = ("teachers", "maintainers", "platforms")  # docs/<name>.md, a page each, in this order
FOLD_LINES, FOLD_SHOWN = 30, 20  # a text output longer than 30 lines shows 20 and folds the rest
TEST_MARKER = re.compile(r"^\s*# NBVAL_[A-Z_]+\s*$")  # comments for the notebook tests (nbval), not readers
ALT_FILE = "_alt_texts.json"
MATHJAX_DIST = "sphinx-mathjax-offline"  # the PyPI package the MathJax 3 files come from
MATHJAX_FILE = "tex-svg-full.js"  # one file: all TeX extensions, SVG output, no fonts to fetch


class SiteError(RuntimeError):
    """The site cannot be built (a missing builder, a bad output folder, a Sphinx error)."""


# -- course facts ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Page:
    """One notebook's page: what the course manifest says about it, and its own title."""

    stem: str  # "03_masks"
    title: str  # "03 · Masks", the notebook's first heading
    teaches: str = ""
    reading: str = ""  # "25 min", or "" for a notebook the manifest does not list
    exercises: str = ""
    download: str = ""  # the learner version's path in the site ("notebooks/03_masks.ipynb"), or ""
    hub: str = ""  # a JupyterHub's address (``site --hub``): the page links to the notebook there, or ""

    @property
    def number(self) -> str:
        return self.stem[:2]


def repo_url(path: str) -> str:
    """A file or folder of the repository on GitHub."""
    kind = "blob" if Path(path.rstrip("/")).suffix else "tree"
    return f"{REPO_URL}/{kind}/{BRANCH}/{path}"


def readme_sections(text: str) -> dict[str, str]:
    """README split at its ``## `` headings: ``{"": intro, "Course map": body, ...}`` (title line dropped)."""
    sections: dict[str, list[str]] = {"": []}
    current, in_code = "", False
    for line in text.splitlines():
        in_code ^= line.lstrip().startswith("```")
        if line.startswith("## ") and not in_code:
            current = line[3:].strip()
            sections[current] = []
        elif in_code or not (current == "" and line.startswith("# ")):
            sections[current].append(line)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}


def _notebook_title(nb, stem: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^# (.+)$", cell.source, re.M)
            if match:
                return match.group(1).strip()
    return stem


def _headings(nb) -> list[str]:
    """The markdown headings of a notebook, in order (for links to its sections)."""
    return [title for cell in nb.cells if cell.cell_type == "markdown"
            for title in re.findall(r"^#{1,6}\s+(.+?)\s*$", re.sub(r"(?ms)^```.*?^```", "", cell.source), re.M)]


def _minutes(reading: str) -> int:
    match = re.search(r"(\d+)\s*min", reading)
    return int(match.group(1)) if match else 0


def _duration(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest:02d} min" if hours else f"{rest} min"


# -- one notebook ---------------------------------------------------------------------------------

@dataclass
class Prepared:
    """A notebook made ready for the site, and what the site builder needs to know about it."""

    nb: nbformat.NotebookNode
    alt_texts: dict[str, str] = field(default_factory=dict)  # sha256 of a PNG -> its alt text
    widgets_without_picture: list[str] = field(default_factory=list)  # "NN_name: widgets.explore_x()"


def _is_colab_cell(cell) -> bool:
    return cell.cell_type == "code" and "google.colab" in cell.source


def _role(cell) -> str | None:
    return (cell.get("metadata", {}).get("encoder_course") or {}).get("role")


def _fence(code: str, language: str = "python") -> str:
    ticks = "`" * max(3, max((len(run) for run in re.findall(r"`+", code)), default=0) + 1)
    return f"{ticks}{language}\n{code.rstrip()}\n{ticks}"


def _md(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source)


def _page_bar(page: Page) -> str:
    meta = f"{page.reading} reading" if page.reading else "reading time not given"
    if page.exercises and page.exercises not in ("—", "-"):
        meta += f" · exercises: {html.escape(page.exercises.replace('`', ''))}"
    links = [("Open in Colab", colab_url(page.stem)), ("Open on Binder", binder_url(page.stem)),
             ("Source on GitHub", repo_url(f"notebooks/solutions/{page.stem}.ipynb"))]
    if page.hub:
        links.insert(0, ("Open on your JupyterHub", hub_url(page.stem, page.hub)))
    buttons = [f'<a class="ec-button" href="{html.escape(url)}">{text}</a>' for text, url in links]
    if page.download:  # the learner version, copied into the site: the notebook to work in
        buttons.insert(0, f'<a class="ec-button" href="{page.download}" download>Download the notebook</a>')
    return (f'<div class="ec-pagebar">\n<span class="ec-meta">{meta}</span>\n' + "\n".join(buttons) + "\n"
            '<p class="ec-note">You are reading the solved notebook with the outputs stored when it last ran. '
            "Widgets are pictures here and the quiz works on the page; download the notebook (the version "
            "with the exercises left for you) or open it on Colab or Binder to run it.</p>\n</div>")


def _solution_only(source: str) -> str:
    """The exercise cell as solved: the markers dropped, the solution kept."""
    lines = [line for line in source.split("\n") if line.strip() not in (BEGIN, END)]
    return "\n".join(lines)


def _pass_line_output(outputs) -> list:
    """The check cell's outputs with the ✓ line shown as what the learner sees when right."""
    texts = [o.get("text", "") for o in outputs if o.get("output_type") == "stream"]
    lines = [line for text in texts for line in text.splitlines() if line.startswith("✓")]
    if not lines:
        return outputs
    return [html_output('<div class="ec-pass"><p class="ec-pass-label">What you will see when your answer '
                        f'is right:</p><pre>{html.escape(chr(10).join(lines))}</pre></div>')]


def _source_output(output):
    """``tools.show_source`` output (Pygments HTML with a global <style>) as a code block, folded when long."""
    data = output.get("data", {})
    markup, text = data.get("text/html", ""), data.get("text/plain")
    if not (text and "<style>" in markup and 'class="highlight"' in markup):
        return output
    lines = text.rstrip().splitlines()
    block = _fence(text)
    if len(lines) > FOLD_LINES:
        block = (f'<details class="ec-fold">\n<summary>Show the source: <code>{html.escape(lines[0].strip())}'
                 f"</code> ({len(lines)} lines)</summary>\n\n{block}\n\n</details>")
    return nbformat.v4.new_output("display_data", data={"text/markdown": block})


def _merged_streams(outputs) -> list:
    """Consecutive stream outputs of one stream as one (as MyST-NB shows them), so a long one can be folded."""
    merged = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")):
            last["text"] = last.get("text", "") + output.get("text", "")
        else:
            merged.append(output)
    return merged


def _folded(output):
    """A text output over :data:`FOLD_LINES` lines: its first lines shown, the rest under "Show ...". """
    text = output.get("text") if output.get("output_type") == "stream" else None
    data = output.get("data", {})
    if text is None and set(data) == {"text/plain"}:
        text = data["text/plain"]
    lines = (text or "").rstrip("\n").split("\n")
    if text is None or len(lines) <= FOLD_LINES:
        return output
    shown, rest = "\n".join(lines[:FOLD_SHOWN]), "\n".join(lines[FOLD_SHOWN:])
    kind = " ec-stderr" if output.get("name") == "stderr" else ""
    return html_output(f'<div class="ec-fold{kind}"><pre>{html.escape(shown)}</pre><details>'
                       f"<summary>Show the other {len(lines) - FOLD_SHOWN} lines</summary>"
                       f"<pre>{html.escape(rest)}</pre></details></div>")


def _shown_code(source: str) -> str:
    """A code cell's source without the lines only the notebook tests read (``# NBVAL_CHECK_OUTPUT``)."""
    return "\n".join(line for line in source.split("\n") if not TEST_MARKER.match(line))


def prepare_notebook(nb: nbformat.NotebookNode, page: Page, linker: Linker | None = None) -> Prepared:
    """A copy of solution notebook ``nb`` shaped for its page (see the module's docstring).

    Args:
        nb: the solution notebook, as stored.
        page: its page.
        linker: makes the other notebooks' mentions links (default: links to ``page`` only).
    """
    nb = nbformat.from_dict(nb)  # a deep copy
    linker = linker or Linker([page.stem])
    state = (nb.metadata.get("widgets") or {}).get(WIDGET_STATE, {}).get("state", {})
    # No widget state on the page: MyST-NB would load the widget manager from a CDN for it.
    nb.metadata.pop("widgets", None)
    prepared = Prepared(nb)
    fallback_alt = f"Figure from notebook {page.number} ({page.title})"
    cells = []
    titled = False
    for cell in nb.cells:
        if _is_colab_cell(cell):
            continue
        if cell.cell_type == "markdown" and not titled and re.match(r"^# ", cell.source):
            title, _, rest = cell.source.partition("\n")
            cells.append(_md(title + "\n\n" + _page_bar(page)))
            if rest.strip():
                cells.append(_md(linker.markdown(rest.strip())))
            titled = True
            continue
        if cell.cell_type != "code":
            if cell.cell_type == "markdown":
                cell.source = linker.markdown(cell.source)
            cells.append(cell)
            continue
        cell.source = _shown_code(cell.source)
        quiz = quiz_number(cell.source) if _role(cell) == "quiz" or "quiz(" in cell.source else None
        if quiz in bank_modules():  # the quiz, from its bank, working on the page
            cells.append(_md(quiz_html(quiz, linker.html)))
            continue
        if BEGIN in cell.source:  # an exercise: every solution region is stubbed, as in the learner version
            solved = _solution_only(cell.source)
            cell.source = stub_source(cell.source, f"{page.stem}, exercise cell")
            cells.append(_md('<p class="ec-label">Exercise: the cell as you get it. Replace the '
                             "<code>raise NotImplementedError</code> line with your code.</p>"))
            cells.append(cell)
            cells.append(_md('<details class="ec-solution">\n<summary>Show a solution</summary>\n\n'
                             + _fence(solved) + "\n\n</details>"))
            continue
        cell.outputs = _cell_outputs(cell, state, page, prepared, fallback_alt)
        cells.append(cell)
    nb.cells = cells
    return prepared


def _cell_outputs(cell, state: dict, page: Page, prepared: Prepared, fallback_alt: str) -> list:
    """A code cell's outputs on the page: widgets as pictures, figures with alt texts, long text folded."""
    outputs = []
    for output in _merged_streams(cell.get("outputs", [])):
        data = output.get("data", {})
        if WIDGET_VIEW in data:
            view = widget_outputs(data, state)
            prepared.alt_texts.update(view.alt_texts)
            if not view.has_picture:
                call = cell.source.strip().splitlines()[-1] if cell.source.strip() else "this cell"
                prepared.widgets_without_picture.append(f"{page.stem}: {call}")
            outputs += view.outputs
            continue
        if "image/png" in data:
            prepared.alt_texts[png_hash(data["image/png"])] = png_alt(output) or fallback_alt
        outputs.append(_folded(_source_output(output)))
    return _pass_line_output(outputs) if _role(cell) == "check" else outputs


# -- landing and teacher pages --------------------------------------------------------------------

def _site_links(text: str, stems: set[str], base: str = "") -> str:
    """Markdown of the repository (README at the top, a guide in ``docs/``: ``base``) made right for the site:
    badges become text links, the notebooks and the guides links to their pages, other paths GitHub links."""
    badge = r"\[!\[([^\]]*)\]\([^)]*\)\]\(([^)]*)\)"  # [![alt](img)](url)
    # A line of badges only goes: the site has its own buttons. Other badges become text links.
    text = re.sub(rf"^(?:[ \t]*{badge})+[ \t]*$\n?", "", text, flags=re.M)
    text = re.sub(badge, r"[\1](\2)", text)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)  # any other image: its alt text

    def link(match: re.Match) -> str:
        label, target = match.group(1), match.group(2)
        if re.match(r"[a-z]+:", target):
            return match.group(0)
        path, hash_, fragment = target.partition("#")
        if path:
            path = posixpath.normpath(posixpath.join(base, path))
        stem = re.fullmatch(r"notebooks/(?:solutions/)?(\d\d_\w+)\.ipynb", path)
        if stem and stem.group(1) in stems:
            return f"[{label}]({stem.group(1)}.ipynb)"
        guide = re.fullmatch(r"docs/(\w+)\.md", path)
        if guide and guide.group(1) in GUIDES:
            return f"[{label}]({guide.group(1)}.md{hash_}{fragment})"
        if path == "README.md":
            return f"[{label}]({REPO_URL}{hash_}{fragment})"
        if not path:  # a heading of the same file: README's is on GitHub, a guide's on its page
            return f"[{label}](#{fragment})" if base else f"[{label}]({REPO_URL}#{fragment})"
        return f"[{label}]({repo_url(path)}{hash_}{fragment})"

    return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", link, text)


def _map_table(pages: list[Page]) -> str:
    rows = ["| # | notebook | what it teaches | reading | open |", "|---|---|---|---|---|"]
    for page in pages:
        name = page.title.split("·", 1)[-1].strip()
        teaches = page.teaches
        if page.exercises and page.exercises not in ("—", "-"):
            teaches += f" *Exercises:* {page.exercises}"
        rows.append(f"| {page.number} | [{name}]({page.stem}.ipynb) | {teaches} | {page.reading or '—'} | "
                    f"[Colab]({colab_url(page.stem)}) [Binder]({binder_url(page.stem)}) |")
    return "\n".join(rows)


def _fill(template: str, **values) -> str:
    return string.Template((SITE_FILES / template).read_text(encoding="utf-8")).substitute(**values)


def _landing(pages: list[Page], readme: dict[str, str], guides: list[str]) -> str:
    stems, first = {p.stem for p in pages}, pages[0]
    page = _fill("index.md", title="The Transformer encoder, built block by block",
                 intro=_site_links(readme.get("", ""), stems), count=len(pages),
                 total_time=_duration(sum(_minutes(p.reading) for p in pages)),
                 first_page=f"{first.stem}.html", first_title=html.escape(first.title),
                 colab_first=colab_url(first.stem), binder_first=binder_url(first.stem),
                 course_map=_map_table(pages), local=_site_links(readme.get("Two commands", ""), stems),
                 learners=_site_links(readme.get("For learners", ""), stems),
                 toc="\n".join(p.stem for p in pages), guides="\n".join(guides))
    return Linker(stems).markdown(page)


def _guide(root: Path, name: str, stems: set[str]) -> str:
    """The page of ``docs/<name>.md``, its links made right for the site."""
    text = (root / "docs" / f"{name}.md").read_text(encoding="utf-8")
    return Linker(stems).markdown(_site_links(text, stems, base="docs"))


def write_sources(root: Path, src: Path, hub: str = "") -> Prepared:
    """Write the Sphinx project (pages, conf.py, static files) into ``src``; return what was collected."""
    readme_path = root / "README.md"
    readme_text = readme_path.read_text(encoding="utf-8") if readme_path.exists() else ""
    readme = readme_sections(readme_text)
    collected = Prepared(nbformat.v4.new_notebook())
    paths, pages = solution_notebooks(root), []
    if not paths:
        raise SiteError(f"no solution notebooks in {root / 'notebooks' / 'solutions'}")
    notebooks = {path.stem: nbformat.read(path, as_version=4) for path in paths}
    linker = Linker(notebooks, {stem: _headings(nb) for stem, nb in notebooks.items()})
    downloads = src / "_extra" / "notebooks"  # html_extra_path: copied to the site's notebooks/ as they are
    downloads.mkdir(parents=True)
    for path in paths:
        nb = notebooks[path.stem]
        listed = next((m for m in manifest.NOTEBOOKS if m.stem == path.stem), None)
        learner = root / "notebooks" / path.name
        if learner.exists():
            shutil.copy(learner, downloads / path.name)
        page = Page(path.stem, _notebook_title(nb, path.stem), listed.teaches if listed else "",
                    f"{listed.reading_min} min" if listed else "",
                    ", ".join(f"`{ex.name}`" for ex in listed.exercises) if listed else "",
                    f"notebooks/{path.name}" if learner.exists() else "", hub)
        prepared = prepare_notebook(nb, page, linker)
        nbformat.write(prepared.nb, src / path.name)
        collected.alt_texts.update(prepared.alt_texts)
        collected.widgets_without_picture += prepared.widgets_without_picture
        pages.append(page)
    guides = [name for name in GUIDES if (root / "docs" / f"{name}.md").is_file()]
    (src / "index.md").write_text(_landing(pages, readme, guides), encoding="utf-8")
    for name in guides:
        (src / f"{name}.md").write_text(_guide(root, name, {p.stem for p in pages}), encoding="utf-8")
    static = src / "_static"
    (static / "mathjax").mkdir(parents=True)
    for name in ("encoder-course.css", "encoder-course.js", "favicon.svg"):
        shutil.copy(SITE_FILES / name, static / name)
    shutil.copytree(SITE_FILES / "templates", src / "_templates")  # the theme's buttons, named
    shutil.copy(mathjax_source(), static / "mathjax" / MATHJAX_FILE)
    (src / ALT_FILE).write_text(json.dumps(collected.alt_texts, indent=0, sort_keys=True), encoding="utf-8")
    settings = "".join(f"{key} = {value!r}\n" for key, value in sphinx_settings().items())
    (src / "conf.py").write_text("# Written by `encoder-course site`: edit encoder_course/site/build.py instead.\n"
                                 + settings, encoding="utf-8")
    return collected


def mathjax_source() -> Path:
    """The one MathJax file the site needs, from the installed ``sphinx-mathjax-offline`` package."""
    try:
        dist = importlib_metadata.distribution(MATHJAX_DIST)
    except importlib_metadata.PackageNotFoundError as exc:
        raise SiteError(f"{MATHJAX_DIST} is not installed: pip install -r requirements-site.txt") from exc
    path = Path(dist.locate_file(f"{MATHJAX_DIST}/static/mathjax/{MATHJAX_FILE}"))
    if not path.exists():
        raise SiteError(f"{MATHJAX_DIST} has no {MATHJAX_FILE} (looked for {path})")
    return path


def sphinx_settings() -> dict:
    """The Sphinx configuration of the site (written into the generated conf.py)."""
    return {
        "project": "encoder-course",
        "html_title": "encoder-course",
        "html_context": {"default_mode": "auto"},  # light or dark as the reader's system; a switch too
        "language": "en",
        "extensions": ["myst_nb", "sphinx.ext.githubpages", "encoder_course.site.build"],
        "exclude_patterns": ["_build", "_extra", "_templates", "**.ipynb_checkpoints"],
        "nb_execution_mode": "off",  # the stored outputs, never a kernel
        "nb_merge_streams": True,
        "myst_enable_extensions": ["dollarmath", "amsmath"],
        "myst_heading_anchors": 3,
        "mathjax_path": f"mathjax/{MATHJAX_FILE}",  # relative: served from _static, no CDN
        "html_theme": "sphinx_book_theme",
        "html_theme_options": {
            "repository_url": REPO_URL, "repository_branch": BRANCH, "path_to_docs": "notebooks",
            "use_repository_button": True, "use_download_button": False, "use_fullscreen_button": False,
            "home_page_in_toc": True, "show_toc_level": 2,
        },
        "templates_path": ["_templates"],
        "html_static_path": ["_static"],
        "html_css_files": ["encoder-course.css"],
        # The menu at every width, the quizzes, copy buttons, enlarging figures, labels the theme lacks.
        "html_js_files": [("encoder-course.js", {"defer": "defer"})],
        "html_extra_path": ["_extra"],
        "html_favicon": "_static/favicon.svg",
        "html_copy_source": False,
        "html_show_sourcelink": False,
        "html_use_index": False,
        "html_domain_indices": False,
        "html_show_sphinx": False,
    }


# -- building -------------------------------------------------------------------------------------

@dataclass
class SiteReport:
    """What a build made: its pages, how long it took, and what could not be shown."""

    out: Path
    pages: list[str]
    seconds: float
    widgets_without_picture: list[str]
    warnings: list[str]


def content_pages(out: str | Path) -> list[str]:
    """The site's pages (landing, one per notebook, the guides), without Sphinx's search page."""
    return sorted(p.name for p in Path(out).glob("*.html") if p.name not in ("search.html", "genindex.html"))


def _ready_out(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        if not (out / ".buildinfo").exists():
            raise SiteError(f"{out} is not empty and holds no earlier site build: choose a new or empty folder")
        shutil.rmtree(out)


def build_site(out: str | Path, root: str | Path | None = None, *, keep_sources: bool = False,
               hub: str = "") -> SiteReport:
    """Build the website of the course into ``out`` from the solution notebooks' stored outputs.

    Args:
        out: the folder to write; a new or empty one, or an earlier build (replaced whole).
        root: the repository root (default: the nearest folder with ``notebooks/solutions``).
        keep_sources: also leave the generated Sphinx project in ``out/../<out name>-sources``.
        hub: a JupyterHub's address: each notebook page also links to the notebook there (nbgitpuller).
    Raises:
        SiteError: the builder is not installed, ``out`` holds something else, or Sphinx failed.
    """
    start = time.perf_counter()
    root, out = find_root(root), Path(out).resolve()
    _ready_out(out)
    try:
        from sphinx.cmd.build import build_main
    except ImportError as exc:
        raise SiteError("the site builder is not installed: pip install -r requirements-site.txt") from exc
    with tempfile.TemporaryDirectory(prefix="encoder-course-site-") as tmp:
        src, build = Path(tmp) / "src", Path(tmp) / "build"
        collected = write_sources(root, src, hub)
        log = build / "warnings.txt"
        build.mkdir()
        # The html folder sits inside `build`: MyST-NB writes its output files next to it.
        code = build_main(["-b", "html", "-q", "-E", "-j", "auto", "-w", str(log), "-d", str(build / "doctrees"),
                           str(src), str(build / "html")])
        warnings = [w for w in log.read_text(encoding="utf-8").splitlines() if w.strip()] if log.exists() else []
        if code != 0:
            raise SiteError("Sphinx failed:\n" + "\n".join(warnings[-20:]))
        shutil.copytree(build / "html", out, dirs_exist_ok=True)
        if keep_sources:
            shutil.copytree(src, out.parent / f"{out.name}-sources", dirs_exist_ok=True)
    return SiteReport(out, content_pages(out), time.perf_counter() - start,
                      collected.widgets_without_picture, warnings)


# -- the Sphinx extension: alt texts on the notebooks' images ------------------------------------

def _set_alt_texts(app, doctree) -> None:
    from docutils import nodes

    path = Path(app.confdir) / ALT_FILE
    if not path.exists():
        return
    alts = json.loads(path.read_text(encoding="utf-8"))
    for image in doctree.findall(nodes.image):
        alt = alts.get(Path(str(image.get("uri", ""))).stem)
        if alt:
            image["alt"] = alt


def setup(app):
    """Sphinx extension: give every notebook image the alt text collected by :func:`prepare_notebook`."""
    app.connect("doctree-read", _set_alt_texts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
