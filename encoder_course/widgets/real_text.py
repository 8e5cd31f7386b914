"""Notebook 12: searching Python's docs with your encoder, before and after fine-tuning, and a live training curve
(the search is :func:`encoder_course.measure.search.search`)."""

from __future__ import annotations

import html

from .. import plots
from ..measure.search import search
from ._display import show_figure

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["EXAMPLE_QUESTIONS", "compare_view", "explore_fine_tuning", "explore_search", "training_view",
           "search_view"]

EXAMPLE_QUESTIONS = (
    "how do I turn a Python object into a JSON string",
    "copy a whole directory with everything in it",
    "wait until a thread has finished",
    "square root of a number",
    "current date and time",
)


def _hits_table(hits, title: str = "") -> str:
    rows = "".join(
        f"<tr><td>{rank}</td><td><code>{html.escape(hit.name)}</code></td><td>{hit.score:.3f}</td>"
        f"<td>{html.escape(hit.passage[:160] + ('…' if len(hit.passage) > 160 else ''))}</td></tr>"
        for rank, hit in enumerate(hits, start=1))
    caption = f"<caption>{html.escape(title)}</caption>" if title else ""
    return (f"<table>{caption}<thead><tr><th>#</th><th>name</th><th>cosine</th><th>passage</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def search_view(index, question: str, k: int = 5) -> str:
    """Callback of :func:`explore_search`: the ``k`` best passages for ``question``, as an HTML table.

    Args:
        index: passages embedded by :func:`encoder_course.measure.search.build_index`.
        question: what the learner typed (an empty question shows nothing).
        k: how many results.
    """
    question = str(question).strip()
    if not question:
        return "<p>Type a question.</p>"
    return _hits_table(search(question, index, k)[0], f"“{question}”")


def explore_search(index, question: str = EXAMPLE_QUESTIONS[0], k: int = 5):
    """Type a question, see the ``k`` passages of ``index`` your encoder finds closest (press Enter to search)."""
    import ipywidgets as W

    box = W.Text(value=question, description="question", continuous_update=False, layout=W.Layout(width="95%"))
    out = W.HTML(value=search_view(index, question, k))

    def update(_change=None):
        out.value = search_view(index, box.value, k)

    box.observe(update, names="value")
    return W.VBox([box, out])


def compare_view(before, after, question: str, k: int = 5) -> str:
    """Callback of :func:`explore_fine_tuning`: one question's results from two indexes side by side (HTML).

    Args:
        before: the index made by the encoder before fine-tuning.
        after: the same passages embedded by the fine-tuned encoder.
        question: the question.
        k: results per side.
    """
    question = str(question).strip()
    if not question:
        return "<p>Type or pick a question.</p>"
    left = _hits_table(search(question, before, k)[0], "before fine-tuning")
    right = _hits_table(search(question, after, k)[0], "after fine-tuning")
    return (f"<p>“{html.escape(question)}”</p><div style='display:flex;gap:1em;flex-wrap:wrap'>"
            f"<div style='flex:1 1 22em'>{left}</div><div style='flex:1 1 22em'>{right}</div></div>")


def explore_fine_tuning(before, after, questions=EXAMPLE_QUESTIONS, k: int = 5):
    """Pick (or type) a question and see what the encoder found before and after fine-tuning, side by side."""
    import ipywidgets as W

    pick = W.Dropdown(options=list(questions), value=questions[0], description="question",
                      layout=W.Layout(width="95%"))
    typed = W.Text(value="", placeholder="or type your own and press Enter", description="your own",
                   continuous_update=False, layout=W.Layout(width="95%"))
    out = W.HTML(value=compare_view(before, after, questions[0], k))

    def update(change):
        out.value = compare_view(before, after, change["new"], k)

    pick.observe(update, names="value")
    typed.observe(update, names="value")
    return W.VBox([pick, typed, out])


def training_view(title: str, redraw_every: int = 25):
    """A progress bar and a loss curve that follow a training run.

    Returns:
        ``(box, callback)``: display ``box``, and pass ``callback(step, steps, loss)`` to the training loop
        (``masked_lm.pretrain``, ``contrastive.fine_tune``); the curve is redrawn every ``redraw_every``
        steps and at the end.
    """
    import ipywidgets as W

    bar = W.IntProgress(value=0, min=0, max=1, description="step 0", layout=W.Layout(width="60%"))
    out = W.Output()
    losses: list[float] = []

    def callback(step: int, steps: int, loss: float) -> None:
        losses.append(loss)
        bar.max, bar.value, bar.description = steps, step, f"step {step}"
        if step % redraw_every == 0 or step == steps:
            out.clear_output(wait=True)
            with out:
                show_figure(plots.training_loss_curves({title: losses}, title=title, smooth=10))

    return W.VBox([bar, out]), callback
