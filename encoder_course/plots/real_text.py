"""Notebook 12: real text's lengths and padding, and retrieval measured three ways."""

from __future__ import annotations

import numpy as np

from .style import COLOURS, PALETTE, finish, label_axes, new_or_given_axes

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["passage_lengths", "retrieval_bars"]


def passage_lengths(lengths, cut: int | None = None, ax=None):
    """A histogram of the passages' lengths in word pieces (with [CLS] and [SEP]), and where they are cut.

    Args:
        lengths: one length per passage.
        cut: the truncation length, drawn as a dashed line (None: none).
    """
    fig, ax = new_or_given_axes(ax, (7, 3.2))
    values = np.asarray(list(lengths), dtype=float)
    ax.hist(values, bins=np.arange(0, values.max() + 4, 2), color=PALETTE["blue"])
    if cut is not None:
        ax.axvline(cut, color=COLOURS["reference"], linestyle="--", label=f"cut at {cut} pieces")
    ax.set_yscale("log")
    label_axes(ax, "Length of each passage", "word pieces per passage", "passages (log scale)",
               legend=cut is not None, grid=True)
    return finish(ax, alt=(f"Histogram of {len(values)} passage lengths in word pieces on a log scale: median "
                           f"{np.median(values):.0f}, 95th percentile {np.percentile(values, 95):.0f}, longest "
                           f"{values.max():.0f}" + (f"; a dashed line marks the cut at {cut}." if cut else ".")))


def retrieval_bars(table: dict, spread: dict | None = None, ax=None):
    """Recall@1, recall@5 and MRR of several retrievers side by side.

    Args:
        table: ``{retriever: {"recall@1": .., "recall@5": .., "MRR": ..}}`` (for several seeds, the mean).
        spread: optional ``{retriever: {metric: (low, high)}}``, drawn as the range over seeds.
    """
    fig, ax = new_or_given_axes(ax, (7, 3.4))
    metrics = ["recall@1", "recall@5", "MRR"]
    width = 0.8 / max(len(table), 1)
    colours = [PALETTE[c] for c in ("grey", "orange", "blue", "green", "purple")]
    summary = []
    for i, (name, scores) in enumerate(table.items()):
        xs = np.arange(len(metrics)) + (i - (len(table) - 1) / 2) * width
        values = [100 * scores[m] for m in metrics]
        err = None
        if spread and name in spread:
            low = [100 * scores[m] - 100 * spread[name][m][0] for m in metrics]
            high = [100 * spread[name][m][1] - 100 * scores[m] for m in metrics]
            err = [low, high]
        ax.bar(xs, values, width, label=name, color=colours[i % len(colours)])
        if err is not None:
            ax.errorbar(xs, values, yerr=err, fmt="none", color="#333333", ecolor="#333333", capsize=3)
        summary.append(f"{name}: " + ", ".join(f"{m} {v:.0f}" for m, v in zip(metrics, values)))
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(["recall@1", "recall@5", "MRR"])
    ax.set_ylim(0, 100)
    label_axes(ax, "Held-out modules: finding the passage from the name", None, "% (MRR × 100)", legend=True,
               grid=True)
    return finish(ax, alt="Grouped bar chart of retrieval on the held-out modules, in percent: "
                          + "; ".join(summary) + (". Error bars show the range over seeds." if spread else "."))
