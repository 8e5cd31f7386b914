"""A notebook's quiz on the website: its question bank as a static form that the site's script marks.

The notebook shows ``widgets.quiz("NN")``, a live widget; a website has no kernel, so the site builds the
same quiz from the same bank (:func:`encoder_course.quizzes.quiz.questions`) as plain HTML, and
``files/encoder-course.js`` does in the browser what the widget does: each question's options in an
order of the reader's own, the first checked answer counts and locks the question, the explanation appears,
and the score adds up. Each question is a ``<fieldset>`` of radio buttons with its legend, and the verdict
goes to a live region, so it works from the keyboard and with a screen reader.

The HTML lists the options in the order :func:`~encoder_course.quizzes.quiz.shown_order` gives for a fixed
seed (never the bank's right-first order) and holds the answer key, as a static page must.
"""

from __future__ import annotations

import html
import re
from typing import Callable

from ..quizzes.quiz import Question, questions, shown_order

SITE_SEED = "website"  # the order in the HTML; the script shuffles again for each reader
_CALL = re.compile(r"\bquiz\(\s*(?:notebook\s*=\s*)?[\"']?(\d{1,2})")


def quiz_number(source: str) -> str | None:
    """The notebook number a quiz cell asks for (``widgets.quiz("02")`` -> ``"02"``), or None if none."""
    if "quiz(" not in source:
        return None
    match = _CALL.search(source)
    if match:
        return match.group(1).zfill(2)
    from ..notebook_tools.manifest import notebook

    return notebook("review").number  # quiz()'s default is the review quiz


def inline_html(text: str, link: Callable[[str], str] = lambda s: s) -> str:
    """Plain text from a bank as HTML: escaped, ```code``` in backticks as <code>, the rest through ``link``."""
    parts = re.split(r"(`[^`]+`)", text)
    return "".join(f"<code>{html.escape(part[1:-1])}</code>" if part.startswith("`") and part.endswith("`")
                   and len(part) > 1 else link(html.escape(part, quote=False)) for part in parts)


def _question(number: str, index: int, question: Question, link: Callable[[str], str]) -> str:
    order = shown_order(question, SITE_SEED, f"{number}.{index}")
    name = f"ec-q{number}-{index + 1}"
    options = "\n".join(
        f'<label class="ec-option"><input type="radio" name="{name}" value="{position}"><span class="ec-letter">'
        f'</span><span class="ec-text">{inline_html(question.options[bank], link)}</span></label>'
        for position, bank in enumerate(order))
    # One line of HTML: a blank line inside would end the markdown's HTML block (&#10; is a newline in <pre>).
    code = (f'<pre class="ec-quiz-code"><code>{html.escape(question.code).replace(chr(10), "&#10;")}</code></pre>\n'
            if question.code else "")
    return (f'<fieldset class="ec-question" data-key="{order.index(0)}">\n'
            f'<legend><span class="ec-qnum">{index + 1}.</span> {inline_html(question.text, link)}</legend>\n'
            f'{code}<div class="ec-options">\n{options}\n</div>\n'
            '<button type="button" class="ec-check">Check</button>\n'
            '<div class="ec-feedback" aria-live="polite"><p class="ec-verdict"></p>'
            f'<p class="ec-explain" hidden>{inline_html(question.explanation, link)} '
            f'(See {inline_html(question.see, link)}.)</p></div>\n</fieldset>')


def quiz_html(number: str, link: Callable[[str], str] = lambda s: s) -> str:
    """Notebook ``number``'s quiz as HTML, one block with no blank line (so markdown keeps it whole).

    Args:
        number: the notebook's number, "02".
        link: turns escaped prose into HTML with the course's cross-references made links.
    """
    bank = questions(number)
    body = "\n".join(_question(number, i, q, link) for i, q in enumerate(bank))
    return (f'<form class="ec-quiz" data-quiz="{number}" aria-label="Quiz of notebook {number}">\n'
            '<p class="ec-quiz-how">Pick an option and press <strong>Check</strong>. Your first answer counts; '
            "then the explanation appears.</p>\n"
            f"{body}\n"
            f'<p class="ec-score" hidden>0 / {len(bank)} right on the first answer</p>\n</form>')
