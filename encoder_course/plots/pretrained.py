"""Notebook 11: a real pretrained encoder (all-MiniLM-L6-v2): sentence similarity and real attention maps."""

from __future__ import annotations

from .style import COLOURS, finish, label_axes, new_figure, to_numpy

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["real_attention_figure", "similarity_by_pooling", "similarity_heatmap"]


def similarity_heatmap(similarity, labels, title: str = "Cosine similarity of sentence embeddings"):
    """Heatmap of an ``(N, N)`` cosine-similarity matrix with the values written in.

    Args:
        similarity: 2-D tensor or array, entries in [-1, 1].
        labels: one short label per sentence (both axes).
        title: figure title.
    """
    values = to_numpy(similarity)
    fig, ax = new_figure((7.5, 4.5))
    image = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if abs(values[i, j]) > 0.6 else "black")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    label_axes(ax, title, "sentence", "sentence")
    fig.colorbar(image, ax=ax, label="cosine similarity (no unit)")
    n = values.shape[0]
    pairs = [(values[i, j], i, j) for i in range(n) for j in range(i + 1, n)]
    text = ""
    if pairs:
        best, worst = max(pairs), min(pairs)
        text = (f" The most similar pair is {labels[best[1]]} and {labels[best[2]]} ({best[0]:.2f}); the least "
                f"similar is {labels[worst[1]]} and {labels[worst[2]]} ({worst[0]:.2f}).")
    return finish(fig, alt=(f"Heatmap of the cosine similarity between {n} sentence embeddings, each value written in "
                            f"its cell, red for similar and blue for opposite; the diagonal is 1.{text}"))


def real_attention_figure(weights, head, tokens, layer, annotate_up_to: int = 8):
    """One head of a real model on one sentence, beside every head's share of weight on [CLS]/[SEP].

    Args:
        weights: ``(H, L, L)`` attention weights of one layer for one sentence.
        head: the head to show large.
        tokens: the ``L`` word pieces, ``[CLS]`` first and ``[SEP]`` last.
        layer: the layer index, for the title.
        annotate_up_to: write the weights into the cells when ``L`` is at most this.
    """
    w = to_numpy(weights)
    n_heads, length, _ = w.shape
    special = (w[:, :, 0] + w[:, :, -1]).mean(-1)  # (H,), averaged over queries
    fig, (ax1, ax2) = new_figure((9, 4.4), ncols=2, gridspec_kw={"width_ratios": [1.35, 1]})
    im = ax1.imshow(w[head], cmap="viridis", vmin=0, vmax=1)
    if length <= annotate_up_to:
        for i in range(length):
            for j in range(length):
                value = float(w[head, i, j])
                ax1.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                         color="black" if value > 0.6 else "white")
    ax1.set_xticks(range(length))
    ax1.set_xticklabels(tokens, rotation=60, ha="right", fontsize=8)
    ax1.set_yticks(range(length))
    ax1.set_yticklabels(tokens, fontsize=8)
    label_axes(ax1, f"layer {layer}, head {head}: attention weights", "key (attended to)", "query (attending)")
    fig.colorbar(im, ax=ax1, fraction=0.046, pad=0.04, label="weight (0 to 1)")
    colours = [COLOURS["highlight"] if h == head else COLOURS["others"] for h in range(n_heads)]
    ax2.bar(range(n_heads), special, color=colours)
    ax2.axhline(2 / length, color=COLOURS["reference"], ls="--", label=f"uniform: 2/{length}")
    ax2.set_ylim(0, 1.05)
    ax2.set_xticks(range(n_heads))
    label_axes(ax2, "Weight parked on [CLS] + [SEP], per head", f"head of layer {layer}",
               "share of weight on [CLS] + [SEP]", legend={"loc": "upper right"})
    i, j = divmod(int(w[head].argmax()), length)
    return finish(fig, alt=(
        f"Left: heatmap of the attention weights of layer {layer}, head {head} of all-MiniLM-L6-v2 on the "
        f"{length} word pieces {' '.join(map(str, tokens))}, queries as rows and keys as columns; the largest "
        f"weight, {w[head, i, j]:.2f}, goes from {tokens[i]} to {tokens[j]}. Right: bar chart of the share of each "
        f"of the {n_heads} heads' weight on [CLS] and [SEP], head {head} highlighted at {special[head]:.2f}, against "
        f"{2 / length:.2f} for uniform attention; the shares run from {special.min():.2f} to {special.max():.2f}."))


_GROUP_STYLES = (("blue", "o"), ("orange", "s"), ("grey", "^"), ("green", "D"), ("purple", "v"))


def similarity_by_pooling(similarities, groups, title: str = "Sentence similarity: two ways to pool"):
    """The cosine similarity of chosen sentence pairs under several poolings, one column of dots each.

    Args:
        similarities: ``{pooling name: (N, N) cosine-similarity matrix}``, in the order to draw them.
        groups: ``{group name: [(i, j), ...]}``: the pairs to plot, one colour and marker per group
            (for example paraphrases, pairs that share a word, unrelated pairs).
        title: figure title.
    """
    from .style import PALETTE

    names = list(similarities)
    if not names or not groups:
        raise ValueError("similarity_by_pooling needs at least one pooling and one group of pairs")
    fig, ax = new_figure((7.5, 4.2))
    width = 0.5 / max(len(groups), 1)
    summary = []
    for g, (group, pairs) in enumerate(groups.items()):
        colour, marker = _GROUP_STYLES[g % len(_GROUP_STYLES)]
        offset = (g - (len(groups) - 1) / 2) * width
        for x, name in enumerate(names):
            values = to_numpy(similarities[name])
            ys = [float(values[i, j]) for i, j in pairs]
            ax.scatter([x + offset] * len(ys), ys, color=PALETTE[colour], marker=marker, s=36, alpha=0.85,
                       edgecolor="black", linewidth=0.4, label=group if x == 0 else None, zorder=3)
            summary.append(f"{group} {min(ys):.2f} to {max(ys):.2f} with {name}")
    ax.axhline(0, color=COLOURS["reference"], lw=0.8, zorder=1)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylim(min(-0.2, ax.get_ylim()[0]), 1.0)
    label_axes(ax, title, "how the token vectors become one sentence vector",
               "cosine similarity of a pair (no unit)", legend={"loc": "lower right"}, grid=True)
    return finish(fig, alt=(f"Dot plot of the cosine similarity of sentence pairs, one column per pooling "
                            f"({', '.join(names)}), one colour and marker per kind of pair: "
                            + "; ".join(summary) + "."))
