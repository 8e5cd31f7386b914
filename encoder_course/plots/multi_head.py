"""Notebook 04 (and 11): what the heads of multi-head attention look at."""

from __future__ import annotations

import math

import numpy as np

from .style import COLOURS, CYCLE, finish, label_axes, new_figure, to_numpy, token_ticks

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["head_maps", "head_view_figure", "score_rank_plot"]


def head_maps(weights, tokens=None, highlight=None, title="Attention weights of every head"):
    """One small heatmap per head.

    Args:
        weights: ``(H, L, L)`` attention weights of one sequence.
        tokens: optional token strings for the axes.
        highlight: index of a head to frame in red.
    """
    w = to_numpy(weights)
    n_heads, length = w.shape[0], w.shape[-1]
    cols = min(n_heads, 4)
    rows = (n_heads + cols - 1) // cols
    fig, axes = new_figure((2.1 * cols + 0.6, 2.1 * rows + 0.6), nrows=rows, ncols=cols, squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= n_heads:
            ax.axis("off")
            continue
        ax.imshow(w[h], cmap="viridis", vmin=0, vmax=1)
        ax.set_title(f"head {h}", fontsize=9, color=COLOURS["highlight"] if h == highlight else "black")
        if h == highlight:
            for spine in ax.spines.values():
                spine.set_edgecolor(COLOURS["highlight"])
                spine.set_linewidth(2)
        if tokens is not None and len(tokens) <= 10:
            token_ticks(ax, tokens, rotation=60, fontsize=8)
        else:
            label_axes(ax, xlabel="key", ylabel="query")
    peaks = w.max(axis=-1).mean(axis=-1)  # (H,): how peaked each head's rows are
    sharp = int(peaks.argmax())
    words = f" over the tokens {', '.join(map(str, tokens))}" if tokens is not None else ""
    return finish(fig, title=f"{title} (colour: weight 0 to 1; rows = queries, columns = keys)", title_size=10,
                  alt=(f"{n_heads} heatmaps, one per attention head, each {length} queries by {length} keys"
                       f"{words} ({title}). Rows sum to 1; the most peaked head is head {sharp}, whose largest "
                       f"weight per row averages {peaks[sharp]:.2f}; the least peaked averages {peaks.min():.2f}."))


def head_view_figure(weights, head, tokens, layer=None, note=""):
    """The heads explorer's picture: one head's attention map, and every head's row entropy.

    Args:
        weights: ``(H, L, L)`` attention weights of one sequence.
        head: the head to show large.
        tokens: token strings.
        layer: layer index, for the title.
        note: text appended to the map's title (e.g. " (random weights)").
    """
    w = to_numpy(weights)
    n_heads, length, _ = w.shape
    # natural log: nats, as in notebook 02 (uniform attention over L keys gives ln L)
    entropy = -(w * np.log(np.clip(w, 1e-12, None))).sum(-1).mean(-1)  # (H,), nats, averaged over queries
    fig, (ax1, ax2) = new_figure((9, 3.9), ncols=2, gridspec_kw={"width_ratios": [1.2, 1]}, layout="constrained")
    top = max(float(w.max()), 1e-6)  # one colour scale for every head, so heads compare fairly
    im = ax1.imshow(w[head], cmap="viridis", vmin=0, vmax=top)
    for i in range(length):
        for j in range(length):
            value = float(w[head, i, j])
            ax1.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                     color="black" if value > 0.6 * top else "white")
    token_ticks(ax1, tokens)
    where = f"layer {layer}, " if layer is not None else ""
    label_axes(ax1, f"{where}head {head}: attention weights{note}", "key (attended to)", "query (attending)")
    fig.colorbar(im, ax=ax1, fraction=0.046, pad=0.04, label="weight")
    colours = [COLOURS["highlight"] if h == head else COLOURS["others"] for h in range(n_heads)]
    ax2.bar(range(n_heads), entropy, color=colours)
    ax2.axhline(math.log(length), color=COLOURS["reference"], ls="--", label=f"uniform: ln {length}")
    ax2.set_ylim(0, math.log(length) * 1.15)
    ax2.set_xticks(range(n_heads))
    label_axes(ax2, "How spread out each head's attention is", "head", "mean row entropy (nats)",
               legend={"loc": "lower right"})
    return finish(fig, alt=(
        f"Left: heatmap of head {head}'s attention weights{note}, {where}{length} queries by {length} keys over the "
        f"tokens {', '.join(map(str, tokens))}, each weight written in its cell. Right: bar chart of each of the "
        f"{n_heads} heads' mean row entropy in nats, head {head} highlighted at {entropy[head]:.2f} nats; the "
        f"entropies run from {entropy.min():.2f} to {entropy.max():.2f}, uniform attention would give "
        f"{math.log(length):.2f}."))


def score_rank_plot(d_heads, ranks, seq_len):
    """Rank of one head's score matrix against its width d_head (the rank can never exceed d_head)."""
    d_heads = list(d_heads)
    fig, ax = new_figure((7, 3.5))
    ax.plot(d_heads, ranks, "o-", color=CYCLE[0], label="measured rank of Q_h K_h^T")
    ax.plot(d_heads, [min(d, seq_len) for d in d_heads], "k--", lw=1, label="min(d_head, L)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(d_heads)
    ax.set_xticklabels([str(d) for d in d_heads])
    label_axes(ax, f"Narrow heads have low-rank scores (L = {seq_len})", "d_head (= d_model / n_heads), log scale",
               "rank of one head's L x L scores", legend={"fontsize": 10}, grid=True, title_size=12)
    pairs = ", ".join(f"d_head {d}: rank {int(r)}" for d, r in zip(d_heads, ranks))
    return finish(fig, alt=(
        f"Line plot of the rank of one head's {seq_len} × {seq_len} score matrix against the head width d_head "
        f"({pairs}), on the dashed line min(d_head, L): a head never has more rank than its width."))
