"""Cross-references on the website: every "notebook 03" in the course's prose becomes a link to its page.

The notebooks name each other in a few ways, all linked by :class:`Linker`:

- "notebook 03", "Notebook 03", "notebook 10_training", "notebook 01's exercise";
- lists and ranges: "notebooks 03 and 05", "notebooks 04, 06 and 05", "notebooks 02-04", "notebooks 01 to 10"
  (each number is its own link);
- "02 · attention", the form of the review notebook's "*Measured in:*" lines and of the quizzes' "See ..." notes; in
  markdown, the section names quoted after it ("02 · attention, "Claim check 2: ..."") link to their sections
  when a heading of that notebook has that name;
- a table row that starts with a notebook's number and name, as notebook 00's map of the course.

Only prose changes: code (fenced or inline), math, existing links and HTML tags are left as they are.
The site's tests find every such mention on every page and check that it sits inside a link.
"""

from __future__ import annotations

import html
import re
from typing import Callable

_NUMBER = r"\d\d(?:_[a-z0-9_]+)?"
MENTION = re.compile(rf"\b(?P<word>[Nn]otebooks?)(?P<space>\s+)(?P<first>{_NUMBER})\b"
                     rf"(?P<more>(?:(?:\s*,\s*|\s*[-–]\s*|\s+(?:and|or|to)\s+){_NUMBER}\b)*)")
_MORE = re.compile(rf"(\s*,\s*|\s*[-–]\s*|\s+(?:and|or|to)\s+)({_NUMBER})\b")
# "02 · attention", then perhaps section names in quotes: ', "Claim check 2: ..." and "Why several heads?"'
_TITLED = re.compile(r"\b(\d\d) · ([a-z][a-z0-9_]*)\b(?P<sections>(?:,?\s+(?:and\s+)?[\"“][^\"”\n]+[\"”])*)")
_QUOTED = re.compile(r"([\"“])([^\"”\n]+)([\"”])")
# What markdown must keep as it is: fenced code, inline code, links and images, HTML tags, math.
_PROTECTED = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[^\n]*\n.*?^(?P=fence)[ \t]*$"
    r"|(?P<ticks>`+).+?(?P=ticks)"
    r"|!?\[[^\]\n]*\]\([^)\n]*\)"
    r"|<[^>\n]+>"
    r"|\$\$.+?\$\$|\$[^$\n]+\$",
    re.M | re.S)
_MAP_ROW = re.compile(r"^(\|\s*)(\d\d)(\s*\|\s*)([a-z][a-z0-9_]*)(\s*\|)", re.M)


def slug(title: str) -> str:
    """A heading's anchor as MyST makes it (``myst_heading_anchors``: GitHub's style) from its markdown text."""
    text = re.sub(r"[`*]", "", title).strip().lower().replace(" ", "-")
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", text)


def _plain(title: str) -> str:
    """A heading or a quoted section name, for comparing: no numbering, no markup, lower case."""
    return re.sub(r"^\d+\.\s+", "", re.sub(r"[`*]", "", title)).strip().lower()


class Linker:
    """Turns mentions of notebooks into links, in markdown (``.ipynb`` targets) or in HTML (``.html``).

    Args:
        stems: every notebook's stem, "03_masks".
        headings: each notebook's markdown headings (``{"02_attention": ["1. Queries, keys...", ...]}``),
            for links to sections; none by default.
    """

    def __init__(self, stems, headings: dict[str, list[str]] | None = None):
        self.stems = {stem[:2]: stem for stem in stems}
        self.headings = headings or {}

    def _stem(self, number: str) -> str | None:
        stem = self.stems.get(number[:2])
        return stem if stem and (len(number) == 2 or number == stem) else None

    def section(self, stem: str, name: str) -> str | None:
        """The anchor of the heading of notebook ``stem`` that ``name`` quotes (whole, or its start), or None."""
        wanted = _plain(name)
        for title in self.headings.get(stem, []):
            have = _plain(title)
            if have == wanted or (min(len(have), len(wanted)) > 15 and (have.startswith(wanted) or
                                                                         wanted.startswith(have))):
                return slug(title)
        return None

    def _prose(self, text: str, link: Callable[..., str], sections: bool = False) -> str:
        def one(match: re.Match) -> str:
            first = self._stem(match["first"])
            more = _MORE.sub(lambda m: m[1] + (link(m[2], self._stem(m[2])) if self._stem(m[2]) else m[2]),
                             match["more"])
            if first is None:
                return match["word"] + match["space"] + match["first"] + more
            if not match["more"]:  # "notebook 03": the whole phrase is the link
                return link(match["word"] + match["space"] + match["first"], first)
            return match["word"] + match["space"] + link(match["first"], first) + more

        def titled(match: re.Match) -> str:
            stem = self.stems.get(match[1])
            if stem != f"{match[1]}_{match[2]}":
                return match[0]
            named = match["sections"]
            if sections:
                def quoted(q: re.Match) -> str:
                    anchor = self.section(stem, q[2])
                    return q[1] + link(q[2], stem, anchor) + q[3] if anchor else q[0]

                named = _QUOTED.sub(quoted, named)
            return link(f"{match[1]} · {match[2]}", stem) + named

        return _TITLED.sub(titled, MENTION.sub(one, text))

    def markdown(self, text: str) -> str:
        """Markdown with its notebook mentions (and a map's rows) as links to the notebooks' pages."""
        def link(label: str, stem: str, anchor: str | None = None) -> str:
            return f"[{label}]({stem}.ipynb{'#' + anchor if anchor else ''})"

        def prose(piece: str) -> str:
            return self._prose(_MAP_ROW.sub(lambda m: self._map_row(m, link), piece), link, sections=True)

        pieces, last = [], 0
        for match in _PROTECTED.finditer(text):
            pieces += [prose(text[last:match.start()]), match.group(0)]
            last = match.end()
        return "".join(pieces) + prose(text[last:])

    def html(self, escaped: str) -> str:
        """Escaped plain text (no tags) with its notebook mentions as ``<a>`` links to the pages."""
        return self._prose(escaped, lambda label, stem, anchor=None: f'<a href="{html.escape(stem)}.html">{label}</a>')

    def _map_row(self, match: re.Match, link) -> str:
        number, name = match[2], match[4]
        if self.stems.get(number) != f"{number}_{name}":
            return match.group(0)
        return match[1] + number + match[3] + link(name, self.stems[number]) + match[5]
