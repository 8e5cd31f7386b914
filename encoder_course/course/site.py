"""The course as a static website, built from the solution notebooks' stored outputs.

``encoder-course site --out DIR`` (or :func:`build_site`) turns ``notebooks/solutions/NN_*.ipynb`` into a
website with Sphinx, MyST-NB and the Sphinx Book Theme (search and a light/dark switch come with the
theme). Nothing is executed: every page shows the outputs stored when the solution was last run, so the
build takes seconds, needs no kernel and no network, and the site loads nothing from the internet (MathJax
is copied in from the pinned ``sphinx-mathjax-offline`` package).

Before Sphinx sees a notebook, :func:`prepare_notebook` makes it readable on a page:

- the Colab set-up cell is dropped, and a bar under the title gives the reading time (from README's course
  map) and links to open the notebook on Colab and Binder, the learner version and the solution;
- an exercise cell shows the learner's stub (exactly as ``encoder-course student`` writes it), with the
  solution folded under it; its check cell's pass line is labelled as what you see when you are right;
- a widget becomes the picture of its first state (from the widget state nbconvert stores in the
  notebook's metadata) and a line saying what the live widget lets you change;
- every figure keeps its alt text (``metadata["image/png"]["alt"]``, or a plain fallback).

A landing page comes from README (intro, course map, the two commands, for learners) and a page for
teachers from README's teacher section. This module is also the Sphinx extension that puts the alt texts
on the images (:func:`setup`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
import string
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path

import nbformat

from .learner_versions import BEGIN, END, find_root, solution_notebooks, stub_source
from .notebook_tools import BRANCH, REPO_SLUG, REPO_URL

SITE_FILES = Path(__file__).with_name("site_files")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
ALT_FILE = "_alt_texts.json"
MATHJAX_DIST = "sphinx-mathjax-offline"  # the PyPI package the MathJax 3 files come from
MATHJAX_FILE = "tex-svg-full.js"  # one file: all TeX extensions, SVG output, no fonts to fetch


class SiteError(RuntimeError):
    """The site cannot be built (a missing builder, a bad output folder, a Sphinx error)."""


# -- course facts ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Page:
    """One notebook's page: what README's course map says about it, and its own title."""

    stem: str  # "03_masks"
    title: str  # "03 · Masks", the notebook's first heading
    teaches: str = ""
    reading: str = ""  # "25 min", or "" when README's map has no row for it
    exercises: str = ""

    @property
    def number(self) -> str:
        return self.stem[:2]


def colab_url(stem: str) -> str:
    """The learner version of notebook ``stem`` opened in Colab (as README's badges)."""
    return f"https://colab.research.google.com/github/{REPO_SLUG}/blob/{BRANCH}/notebooks/{stem}.ipynb"


def binder_url(stem: str) -> str:
    """The learner version of notebook ``stem`` opened in JupyterLab on Binder (as README's badges)."""
    return f"https://mybinder.org/v2/gh/{REPO_SLUG}/{BRANCH}?urlpath=lab/tree/notebooks/{stem}.ipynb"


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


def _table_cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def course_map(readme_text: str) -> dict[str, dict[str, str]]:
    """README's course map table, by notebook number: ``{"03": {"reading": "25 min", ...}}``.

    The columns are found by their headings ("#", "what it teaches", "reading", "exercises"), so the
    table may gain or reorder columns.
    """
    body = readme_sections(readme_text).get("Course map", "")
    rows = [line for line in body.splitlines() if line.strip().startswith("|")]
    if len(rows) < 3:
        return {}
    header = [cell.lower() for cell in _table_cells(rows[0])]
    table = {}
    for row in rows[2:]:
        cells = dict(zip(header, _table_cells(row)))
        number = cells.get("#", "")
        if re.fullmatch(r"\d\d", number):
            table[number] = cells
    return table


def _notebook_title(nb, stem: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^# (.+)$", cell.source, re.M)
            if match:
                return match.group(1).strip()
    return stem


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
    widgets_without_picture: list[str] = field(default_factory=list)  # "NN_name: widgets.quiz()"


def _is_colab_cell(cell) -> bool:
    return cell.cell_type == "code" and "google.colab" in cell.source


def _role(cell) -> str | None:
    return (cell.get("metadata", {}).get("encoder_course") or {}).get("role")


def _fence(code: str, language: str = "python") -> str:
    ticks = "`" * max(3, max((len(run) for run in re.findall(r"`+", code)), default=0) + 1)
    return f"{ticks}{language}\n{code.rstrip()}\n{ticks}"


def _md(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source)


def _html_output(markup: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("display_data", data={"text/html": markup})


def _page_bar(page: Page) -> str:
    meta = f"{page.reading} reading" if page.reading else "reading time not given"
    if page.exercises and page.exercises not in ("—", "-"):
        meta += f" · exercises: {html.escape(page.exercises.replace('`', ''))}"
    links = [("Open in Colab", colab_url(page.stem)), ("Open on Binder", binder_url(page.stem)),
             ("Learner version", repo_url(f"notebooks/{page.stem}.ipynb")),
             ("Solution notebook", repo_url(f"notebooks/solutions/{page.stem}.ipynb"))]
    buttons = "\n".join(f'<a class="ec-button" href="{html.escape(url)}">{text}</a>' for text, url in links)
    return (f'<div class="ec-pagebar">\n<span class="ec-meta">{meta}</span>\n{buttons}\n'
            '<p class="ec-note">You are reading the solved notebook with the outputs stored when it last ran. '
            "Widgets are pictures here; open the notebook to run it and to use them.</p>\n</div>")


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
    return [_html_output('<div class="ec-pass"><p class="ec-pass-label">What you will see when your answer '
                         f'is right:</p><pre>{html.escape(chr(10).join(lines))}</pre></div>')]


def _source_output(output):
    """``ec.show_source`` output (Pygments HTML with a global <style>) as a highlighted code block."""
    data = output.get("data", {})
    markup, text = data.get("text/html", ""), data.get("text/plain")
    if text and "<style>" in markup and 'class="highlight"' in markup:
        return nbformat.v4.new_output("display_data", data={"text/markdown": _fence(text)})
    return output


def _png_alt(output) -> str | None:
    alt = (output.get("metadata", {}).get("image/png") or {}).get("alt")
    return alt.strip() if isinstance(alt, str) and alt.strip() else None


def _png_hash(b64: str | list) -> str:
    if isinstance(b64, list):
        b64 = "".join(b64)
    return hashlib.sha256(base64.b64decode(b64)).hexdigest()


def prepare_notebook(nb: nbformat.NotebookNode, page: Page) -> Prepared:
    """A copy of solution notebook ``nb`` shaped for its page (see the module's docstring)."""
    nb = nbformat.from_dict(nb)  # a deep copy
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
                cells.append(_md(rest.strip()))
            titled = True
            continue
        if cell.cell_type != "code":
            cells.append(cell)
            continue
        role = _role(cell)
        if BEGIN in cell.source:  # an exercise: every solution region is stubbed, as in the learner version
            solved = _solution_only(cell.source)
            cell.source = stub_source(cell.source, f"{page.stem}, exercise cell")
            cells.append(_md('<p class="ec-label">Exercise: the cell as you get it. Replace the '
                             "<code>raise NotImplementedError</code> line with your code.</p>"))
            cells.append(cell)
            cells.append(_md('<details class="ec-solution">\n<summary>Show a solution</summary>\n\n'
                             + _fence(solved) + "\n\n</details>"))
            continue
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                outputs += _widget_outputs(data, state, cell.source, page, prepared)
                continue
            if "image/png" in data:
                prepared.alt_texts[_png_hash(data["image/png"])] = _png_alt(output) or fallback_alt
            outputs.append(_source_output(output))
        if role == "check":
            outputs = _pass_line_output(outputs)
        cell.outputs = outputs
        cells.append(cell)
    nb.cells = cells
    return prepared


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


def _widget_outputs(data: dict, state: dict, source: str, page: Page, prepared: Prepared) -> list:
    """The outputs that stand for a widget on the page: its first picture and what it lets you change."""
    model_id = (data.get(WIDGET_VIEW) or {}).get("model_id", "")
    entries = list(_walk(model_id, state))
    controls = [c for c in (_control(e) for e in entries) if c]
    if not entries:
        controls = _controls_from_repr(str(data.get("text/plain", "")))
    shown = [f"{n} = {first}" for n, _, first in controls if n and first]
    call = source.strip().splitlines()[-1] if source.strip() else "this cell"
    outputs = []
    for entry in entries:
        if entry.get("model_name") != "OutputModel":
            continue
        for out in entry.get("state", {}).get("outputs", []):
            out = nbformat.from_dict(out)
            if "image/png" in out.get("data", {}):
                alt = _png_alt(out) or ("The first picture the live widget draws"
                                        + (f", for {', '.join(shown)}" if shown else "") + ".")
                prepared.alt_texts[_png_hash(out["data"]["image/png"])] = alt
                outputs.append(nbformat.v4.new_output(
                    "display_data", data={"image/png": out["data"]["image/png"], "text/plain": alt},
                    metadata={"image/png": {"alt": alt}}))
            elif out.get("output_type") == "stream" or "text/plain" in out.get("data", {}):
                outputs.append(out)
    line = _change_line(controls, bool(outputs))
    if outputs:
        first = f" Shown here: its first picture, for {html.escape(', '.join(shown))}." if shown else ""
        note = f"{line}{first} Open the notebook on Colab or Binder to use it."
        return outputs + [_html_output(f'<p class="ec-widget-note">{note}</p>')]
    prepared.widgets_without_picture.append(f"{page.stem}: {call}")
    text = _static_markup(model_id, state) if entries else ""
    plain = ("The notebook stores no picture of this widget" + (", so here is its text as it first appears."
                                                                 if text else ", so it cannot be shown here."))
    note = f"{plain} {line} Open the notebook on Colab or Binder to use it."
    body = f'<div class="ec-widget-static">\n{text}\n</div>' if text else ""
    return [_html_output(f'<p class="ec-widget-note">{note}</p>{body}')]


# -- landing and teacher pages --------------------------------------------------------------------

def _site_links(text: str, stems: set[str]) -> str:
    """README markdown made right for the site: badges become text links, repository paths GitHub links."""
    badge = r"\[!\[([^\]]*)\]\([^)]*\)\]\(([^)]*)\)"  # [![alt](img)](url)
    # A line of badges only goes: the site has its own buttons. Other badges become text links.
    text = re.sub(rf"^(?:[ \t]*{badge})+[ \t]*$\n?", "", text, flags=re.M)
    text = re.sub(badge, r"[\1](\2)", text)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)  # any other image: its alt text

    def link(match: re.Match) -> str:
        label, target = match.group(1), match.group(2)
        if re.match(r"[a-z]+:", target):
            return match.group(0)
        stem = re.fullmatch(r"notebooks/(?:solutions/)?(\d\d_\w+)\.ipynb", target)
        if stem and stem.group(1) in stems:
            return f"[{label}]({stem.group(1)}.ipynb)"
        if target.startswith("#"):
            return f"[{label}]({REPO_URL}{target})"
        return f"[{label}]({repo_url(target)})"

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


def _release_section(readme: dict[str, str]) -> str:
    """README's section on releasing to nbgrader; none when its teacher section (on the page) has it."""
    if "encoder-course release" in readme.get("For teachers", ""):
        return ""
    for name, body in readme.items():
        if name and "encoder-course release" in body:
            return f"## {name}\n\n{body}"
    return ("## Releasing to nbgrader\n\n"
            "The exercises carry nbgrader's solution markers (`### BEGIN SOLUTION` and `### END SOLUTION`) and "
            "every check cell is tagged with its exercise and points, so the course can be handed to nbgrader. "
            "`encoder-course release` prepares the notebooks for it; `encoder-course release --help` lists "
            "its options.")


def _fill(template: str, **values) -> str:
    return string.Template((SITE_FILES / template).read_text(encoding="utf-8")).substitute(**values)


def _landing(pages: list[Page], readme: dict[str, str]) -> str:
    stems, first = {p.stem for p in pages}, pages[0]
    return _fill("index.md", title="The Transformer encoder, built block by block",
                 intro=_site_links(readme.get("", ""), stems), count=len(pages),
                 total_time=_duration(sum(_minutes(p.reading) for p in pages)),
                 first_page=f"{first.stem}.html", first_title=html.escape(first.title),
                 colab_first=colab_url(first.stem), binder_first=binder_url(first.stem),
                 course_map=_map_table(pages), local=_site_links(readme.get("Two commands", ""), stems),
                 learners=_site_links(readme.get("For learners", ""), stems),
                 toc="\n".join(p.stem for p in pages))


def _teachers(pages: list[Page], readme: dict[str, str]) -> str:
    stems = {p.stem for p in pages}
    fallback = "Hand out `notebooks/`; the solutions with their outputs are in `notebooks/solutions/`."
    return _fill("teachers.md", teachers=_site_links(readme.get("For teachers", fallback), stems),
                 release=_site_links(_release_section(readme), stems))


def write_sources(root: Path, src: Path) -> Prepared:
    """Write the Sphinx project (pages, conf.py, static files) into ``src``; return what was collected."""
    readme_path = root / "README.md"
    readme_text = readme_path.read_text(encoding="utf-8") if readme_path.exists() else ""
    readme, table = readme_sections(readme_text), course_map(readme_text)
    collected = Prepared(nbformat.v4.new_notebook())
    pages = []
    src.mkdir(parents=True)
    for path in solution_notebooks(root):
        nb = nbformat.read(path, as_version=4)
        row = table.get(path.stem[:2], {})
        page = Page(path.stem, _notebook_title(nb, path.stem), row.get("what it teaches", ""),
                    row.get("reading", ""), row.get("exercises", ""))
        prepared = prepare_notebook(nb, page)
        nbformat.write(prepared.nb, src / path.name)
        collected.alt_texts.update(prepared.alt_texts)
        collected.widgets_without_picture += prepared.widgets_without_picture
        pages.append(page)
    if not pages:
        raise SiteError(f"no solution notebooks in {root / 'notebooks' / 'solutions'}")
    (src / "index.md").write_text(_landing(pages, readme), encoding="utf-8")
    (src / "teachers.md").write_text(_teachers(pages, readme), encoding="utf-8")
    static = src / "_static"
    (static / "mathjax").mkdir(parents=True)
    for name in ("encoder-course.css", "favicon.svg"):
        shutil.copy(SITE_FILES / name, static / name)
    shutil.copy(mathjax_source(), static / "mathjax" / MATHJAX_FILE)
    (src / ALT_FILE).write_text(json.dumps(collected.alt_texts, indent=0, sort_keys=True), encoding="utf-8")
    settings = "".join(f"{key} = {value!r}\n" for key, value in sphinx_settings().items())
    (src / "conf.py").write_text("# Written by `encoder-course site`: edit encoder_course/course/site.py instead.\n"
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
        "extensions": ["myst_nb", "sphinx.ext.githubpages", "encoder_course.course.site"],
        "exclude_patterns": ["_build", "**.ipynb_checkpoints"],
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
        "html_static_path": ["_static"],
        "html_css_files": ["encoder-course.css"],
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
    """The site's pages (landing, one per notebook, teachers), without Sphinx's search page."""
    return sorted(p.name for p in Path(out).glob("*.html") if p.name not in ("search.html", "genindex.html"))


def _ready_out(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        if not (out / ".buildinfo").exists():
            raise SiteError(f"{out} is not empty and holds no earlier site build: choose a new or empty folder")
        shutil.rmtree(out)


def build_site(out: str | Path, root: str | Path | None = None, *, keep_sources: bool = False) -> SiteReport:
    """Build the website of the course into ``out`` from the solution notebooks' stored outputs.

    Args:
        out: the folder to write; a new or empty one, or an earlier build (replaced whole).
        root: the repository root (default: the nearest folder with ``notebooks/solutions``).
        keep_sources: also leave the generated Sphinx project in ``out/../<out name>-sources``.
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
        collected = write_sources(root, src)
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
