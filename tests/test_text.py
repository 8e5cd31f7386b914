"""Learner-facing text never argues with a document the learner does not have.

The course was designed from texts that learners never see. No notebook (text, code or stored output),
package message or comment, README or website file may mention them ("the seed says ...", "the seed's
recipe", the design notes): a claim the course examines is introduced in its own words, with a
published source, and measured.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DESIGN_DOCUMENTS = re.compile(
    r"seed(?:'s|’s|\s+texts?\b|\s+claims?\b|\s+says\b|\s+states\b|\s+calls\b|\s+notes?\b|\s+documents?\b|_notes)"
    r"|SEED_NOTES|COURSE\.md|STYLE\.md|design (?:text|document)s?\b",
    re.IGNORECASE,
)
FILES = sorted(
    [p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts]
    + list((ROOT / "encoder_course").rglob("*.py"))
    + list((ROOT / "encoder_course").rglob("*.html"))
    + list((ROOT / "encoder_course").rglob("*.md"))
    + list((ROOT / "docs").glob("*.md"))
    + [ROOT / "README.md"]
)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_mention_of_the_design_documents(path):
    text = path.read_text(encoding="utf-8")
    hits = [text[max(0, m.start() - 60):m.end() + 60].replace("\n", " ") for m in DESIGN_DOCUMENTS.finditer(text)]
    assert not hits, f"{path.name} mentions the design documents: {hits[:3]}"


def test_the_pattern_catches_what_it_must():
    for sentence in ("The seed text says 4x is optimal.", "the seed's recipe", "as the seed claims",
                     "see SEED_NOTES", "the design documents", "The seed says"):
        assert DESIGN_DOCUMENTS.search(sentence), sentence
    for sentence in ("tools.seed_everything(0)", "fixes the random seed, so the numbers", "seed: which random encoder"):
        assert not DESIGN_DOCUMENTS.search(sentence), sentence
