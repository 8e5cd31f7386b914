"""encoder_course.widgets.real_text: the search, the before/after comparison and the live training curve of notebook 12.

The callbacks are called for every control value on a small index made by a stand-in encoder (the search itself
is tested in test_search.py; the real encoder in test_pretrained.py).
"""

from __future__ import annotations

import pytest
import torch

from encoder_course import widgets
from encoder_course.measure import search


class _Toy:
    WORDS = ("json", "copy", "thread", "root", "date")

    def __init__(self, shift=0.0):
        self.shift = shift

    def embed(self, texts, batch_size=32):
        vectors = torch.tensor([[t.lower().count(w) + 0.01 + self.shift * i for i, w in enumerate(self.WORDS)]
                                for t in texts])
        return torch.nn.functional.normalize(vectors, dim=-1)


NAMES = ["json.dumps", "shutil.copytree", "threading.Thread.join", "math.sqrt", "datetime.datetime.now"]
PASSAGES = ["Serialize obj to a JSON formatted str.", "Recursively copy a directory tree.",
            "Wait until the thread terminates.", "Return the square root of x.", "Return the current local date."]


@pytest.fixture(scope="module")
def indexes():
    return search.build_index(_Toy(), NAMES, PASSAGES), search.build_index(_Toy(0.3), NAMES, PASSAGES)


@pytest.mark.parametrize("question", [*widgets.EXAMPLE_QUESTIONS, "", "   ", "<b>json</b> & copy"])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_search_view_lists_k_hits_with_their_names_escaped(indexes, question, k):
    html = widgets.search_view(indexes[0], question, k)
    if not question.strip():
        assert "Type a question" in html
        return
    assert html.count("<tr><td>") == k
    assert "<b>json</b>" not in html  # the question is escaped
    first = search.search(question, indexes[0], k)[0][0]
    assert f"<code>{first.name}</code>" in html


@pytest.mark.parametrize("question", [*widgets.EXAMPLE_QUESTIONS, ""])
def test_compare_view_shows_both_sides(indexes, question):
    html = widgets.compare_view(*indexes, question, k=3)
    if not question:
        assert "question" in html
        return
    assert "before fine-tuning" in html and "after fine-tuning" in html and html.count("<tr><td>") == 6


def test_the_explorers_wire_their_controls_to_the_callbacks(indexes):
    box = widgets.explore_search(indexes[0], question="json")
    text, out = box.children
    text.value = "thread"
    assert "threading.Thread.join" in out.value.split("</tr>")[1]  # the first hit after the header
    box = widgets.explore_fine_tuning(*indexes, questions=("json", "copy a tree"))
    pick, typed, out = box.children
    pick.value = "copy a tree"
    assert "“copy a tree”" in out.value
    typed.value = "the date"
    assert "“the date”" in out.value


def test_the_live_curve_follows_the_steps():
    box, follow = widgets.training_view("loss", redraw_every=2)
    bar = box.children[0]
    for step in range(1, 6):
        follow(step, 5, 1.0 / step)
    assert (bar.value, bar.max, bar.description) == (5, 5, "step 5")
